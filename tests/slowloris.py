# SPDX-License-Identifier: Apache-2.0
"""slowloris.py PORT [--same N]: holds slow HTTP connections to 127.0.0.1:PORT
(tests/t_hostile2.sh, issue 23.7) while scraping /metrics, and prints one line of results:

  held=H refused=R idle_dropped=0|1 scrapes=OK/N

Ten connections from each of 127.0.0.2 .. 127.0.0.9 (80 in all, loopback only)
send a partial request line and then one byte a second, so that an inactivity
timeout alone never drops them; one more from 127.0.0.10 sends nothing. After a
second of that, nine scrapes from 127.0.0.1 (3 s timeout each) must be answered.
'held': slow connections still open at the end (the server closed the others:
'refused'); 'idle_dropped': the silent one was closed by the server within 8 s.
Every wait is bounded (about 12 s in all).

--same N (tests/t_serve_metrics.sh, issue 44.5): N slow connections from 127.0.0.1,
the scraper's own address, each sending a byte every half second and opened again
whenever the server closes it (a persistent attacker); after a second, twelve
scrapes from 127.0.0.1 (3 s timeout each), one every half second:

  held=H reopened=R scrapes=OK/N max_s=S

'held': attacker connections open at the end; 'reopened': how many it had to
open again; 'max_s': the slowest answered scrape, in seconds."""
import socket
import sys
import time
import urllib.request

port = int(sys.argv[1])


def alive(s):
    """Still open: a byte goes out and nothing (no EOF) comes back."""
    try:
        s.sendall(b"X")
    except OSError:
        return False
    s.setblocking(False)
    try:
        s.recv(1)
        return False  # EOF, or the server answered: no longer held
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)
        s.settimeout(2)


def slow_conn(src="127.0.0.1"):
    """A connection from src that sent a partial request, or None."""
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        return s
    except OSError:
        s.close()
        return None


def scrape():
    """Seconds one scrape from 127.0.0.1 took, or None when it failed."""
    t = time.time()
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=3) as r:
            if r.status == 200 and b"gpuos_clients" in r.read():
                return time.time() - t
    except OSError:
        pass
    return None


def same_address(n):
    slow = [slow_conn() for _ in range(n)]
    reopened = ok = tries = 0
    worst = 0.0
    t0 = time.time()
    while time.time() - t0 < 8:
        for i, s in enumerate(slow):
            if s is None or not alive(s):
                if s is not None:
                    s.close()
                slow[i] = slow_conn()
                reopened += 1
        if time.time() - t0 > 1 and tries < 12:
            tries += 1
            took = scrape()
            if took is not None:
                ok += 1
                worst = max(worst, took)
        time.sleep(0.5)
    held = len([s for s in slow if s is not None and alive(s)])
    print("held=%d reopened=%d scrapes=%d/%d max_s=%.3f" % (held, reopened, ok, tries, worst))


if len(sys.argv) > 3 and sys.argv[2] == "--same":
    same_address(int(sys.argv[3]))
    sys.exit(0)
slow = [s for s in (slow_conn("127.0.0.%d" % a) for a in range(2, 10) for _ in range(10)) if s]
idle = socket.socket()
idle.bind(("127.0.0.10", 0))
idle.settimeout(2)
idle.connect(("127.0.0.1", port))

t0 = time.time()
ok = n = 0
while time.time() - t0 < 10:
    slow = [s for s in slow if alive(s) or s.close()]
    if time.time() - t0 > 1 and n < 9:
        n += 1
        ok += scrape() is not None
    time.sleep(0.5)
time.sleep(max(0, 8 - (time.time() - t0)))
idle.setblocking(False)
try:
    dropped = idle.recv(1) == b""
except BlockingIOError:
    dropped = False
except OSError:
    dropped = True
held = len([s for s in slow if alive(s)])
print("held=%d refused=%d idle_dropped=%d scrapes=%d/%d" % (held, 80 - held, int(dropped), ok, n))
