# lit configuration for sparsetile's compiler tests. The generated
# lit.site.cfg.py (build dir) sets the tool paths and loads this file.
#
# Substitutions: %stc, %tile-opt, %FileCheck, %not, %ptxas, %examples.
# Plain `FileCheck` and `not` also work: their directory leads PATH.

import os

import lit.formats

config.name = "sparsetile"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tile", ".mlir"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.sparsetile_obj_root, "tests", "lit")

config.substitutions.append(("%stc", config.stc))
config.substitutions.append(("%tile-opt", config.tile_opt))
config.substitutions.append(("%FileCheck", config.filecheck))
config.substitutions.append(("%not", config.not_tool))
config.substitutions.append(("%ptxas", config.ptxas))
config.substitutions.append(("%examples", config.examples_dir))

# Bare tool names in RUN lines resolve to the tools under test first.
path = [os.path.dirname(config.stc), os.path.dirname(config.tile_opt),
        os.path.dirname(config.filecheck), os.path.dirname(config.ptxas)]
config.environment["PATH"] = os.pathsep.join(
    path + [config.environment.get("PATH", os.environ.get("PATH", ""))])
