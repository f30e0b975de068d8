
# A tiny test runner for MicroPython with an honest exit code (unittest.main() on MicroPython exits 0 even
# when a test fails). Usage: micropython mprun.py MODULE [MODULE ...]
# Runs every function named test_* in each module (in name order), prints one line per test and a closing
# "N passed, N failed" line, and exits 1 on any failure (or when nothing ran).
import sys


def run(names):
    passed = failed = 0
    for name in names:
        try:
            mod = __import__(name)
        except Exception as exc:
            print("FAIL %s (import)" % name)
            sys.print_exception(exc)
            failed += 1
            continue
        setup = getattr(mod, "setup", None)
        for attr in sorted(dir(mod)):
            if not attr.startswith("test_"):
                continue
            fn = getattr(mod, attr)
            try:
                if setup is not None:
                    setup()
                fn()
            except Exception as exc:
                failed += 1
                print("FAIL %s.%s" % (name, attr))
                sys.print_exception(exc)
            else:
                passed += 1
                print("PASS %s.%s" % (name, attr))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
