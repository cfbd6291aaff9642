"""CTest's entry point of the pytest suite: `run.py cpu` runs every test but the GPU ones, `run.py gpu` only
test_gpu.py. Exit 77 (CTest: skipped, reason printed) when pytest is missing or when every GPU test skipped,
so a GPU run without a GPU is reported as skipped, never as passed."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class Outcomes:
    """Counts what the tests did (pytest's own exit code is 0 when everything skipped)."""

    def __init__(self):
        self.passed = self.skipped = 0
        self.reasons = set()

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.passed:
            self.passed += 1
        if report.skipped:
            self.skipped += 1
            if isinstance(report.longrepr, tuple):
                self.reasons.add(report.longrepr[2])


def main():
    label = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    try:
        import pytest
    except ImportError:
        print(f"Python tests SKIPPED: pytest is not installed for {sys.executable} (apt-get install python3-pytest)")
        return 77
    gpu_file = os.path.join(HERE, "test_gpu.py")
    args = ["-q", "-rs", "-p", "no:cacheprovider", "--rootdir", HERE]
    args += [gpu_file] if label == "gpu" else [HERE, "--ignore", gpu_file]
    outcomes = Outcomes()
    code = pytest.main(args + sys.argv[2:], plugins=[outcomes])
    if code == 0 and outcomes.passed == 0 and outcomes.skipped > 0:
        print(f"Python {label} tests SKIPPED: " + "; ".join(sorted(outcomes.reasons)))
        return 77
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
