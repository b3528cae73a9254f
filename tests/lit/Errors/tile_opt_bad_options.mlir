// tile-opt parses LLVM's command line itself, so a bad option value, for the
// tool or for the sparsetile pipeline, is a usage error (exit 2) naming the
// option, as in stc; and --help lists the pipeline with its options.
//
// RUN: sh -c 'tile-opt %s --sparsetile-pipeline="arch=sm_99" >/dev/null 2>&1; test $? -eq 2'
// RUN: not tile-opt %s --sparsetile-pipeline="arch=sm_99" 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: sh -c 'tile-opt %s --sparsetile-pipeline="num-stages=x" >/dev/null 2>&1; test $? -eq 2'
// RUN: not tile-opt %s --sparsetile-pipeline="num-stages=x" 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not tile-opt %s --sparsetile-pipeline="num-stages=9" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: sh -c 'tile-opt %s --no-such-option >/dev/null 2>&1; test $? -eq 2'
// RUN: tile-opt %s --sparsetile-pipeline="arch=sm_80 num-stages=2" | FileCheck %s --check-prefix=OK
// RUN: tile-opt --help | FileCheck %s --check-prefix=HELP
// ARCH: sparsetile-pipeline: arch: unsupported GPU architecture 'sm_99'
// STAGES: for the --num-stages option: 'x' value invalid for integer argument
// RANGE: sparsetile-pipeline: num-stages takes a ring depth from 0 (automatic) to 8
// OK: module attributes {gpu.container_module}
// HELP: --sparsetile-pipeline
// HELP-NEXT: --arch=
// HELP-NEXT: --num-stages=
module {}
