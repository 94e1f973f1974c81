# SPDX-License-Identifier: Apache-2.0
# fw_results.py: how a framework program's "RESULT ..." line under gpuos is
# compared with its native run (tests/gpu/frameworks.sh, tests/gpu/doctor.sh):
# word by word, numbers to 1e-3 relative (a GEMM whose algorithm differs sums in
# another order), every other word exactly.


def close(a, b):
    """Whether RESULT lines a and b (the text after "RESULT ") agree."""
    if a == b:
        return True
    wa, wb = a.split(), b.split()
    if len(wa) != len(wb):
        return False
    for x, y in zip(wa, wb):
        if x == y:
            continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if abs(fx - fy) > 1e-3 * max(abs(fx), abs(fy), 1e-30):
            return False
    return True
