#!/usr/bin/env python3
"""Runs one unittest file for ctest.

    python3 run.py test_capi.py

Exit status: 0 when every test passed (some may have skipped), 1 on any
failure or error (or a file without tests), 77 when every test was skipped
(ctest reports that as "Skipped" through SKIP_RETURN_CODE 77), after
printing the skip reasons. From a source checkout the package is found in
<repo>/python when PYTHONPATH does not name it.
"""

import importlib.util
import os
import sys
import unittest

SKIPPED = 77


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: run.py TEST_FILE.py\n")
        return 2
    path = os.path.abspath(argv[1])
    here = os.path.dirname(os.path.abspath(__file__))
    repo_python = os.path.join(os.path.dirname(os.path.dirname(here)),
                               "python")
    if importlib.util.find_spec("sparsetile") is None:
        sys.path.insert(0, repo_python)
    sys.path.insert(0, os.path.dirname(path))  # The tests' helpers.

    name = os.path.splitext(os.path.basename(path))[0]
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except unittest.SkipTest as e:
        print("SKIPPED %s: %s" % (name, e))
        return SKIPPED
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(
        suite)
    sys.stdout.flush()
    if not result.wasSuccessful():
        return 1
    if result.skipped and result.testsRun - len(result.skipped) <= 0:
        reasons = sorted(set(reason for _, reason in result.skipped))
        print("SKIPPED %s: every test was skipped:" % name)
        for reason in reasons:
            print("  " + reason)
        return SKIPPED
    if result.testsRun == 0:
        print("FAILED %s: no tests" % name)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
