#!/usr/bin/env python3
"""The HTML report in headless Chromium (meson test `report_browser`).

Writes the report of a trace with `swapplan report`, then with Debian's
`chromium --headless --no-sandbox --disable-gpu` (runs as root in CI):

  1. --dump-dom after the page's script ran: <body data-report-status="ok">
     (the script's own marker; "error: ..." when drawing failed), the memory
     curves (one <path class="curve"> per series: unswapped + each policy,
     each with its dashed <path class="curve reserved">), the budget line and
     timeline rectangles exist;
  2. the browser log (--enable-logging=stderr --v=0) has no console line
     (the page logs nothing; errors and uncaught exceptions show as CONSOLE);
  3. --screenshot: the PNG (parsed with zlib, no other dependency) contains
     pixels of exactly the unswapped curve's grey, the first policy's blue
     and the budget's red.

With --replay the page is `swapplan replay TRACE --html` (report/
replay_report.h): the same checks, with the peak-per-iteration curve (the
first palette blue) and the capacity line (red) instead of the unswapped
curve and the policy curves, and no stream timeline.

Every browser run is bounded (timeout 60 s). Usage:
  browser_test.py SWAPPLAN TRACE [swapplan report flags...]
  browser_test.py --replay SWAPPLAN TRACE [swapplan replay flags...]
Exit 0 on success, 1 with the failed checks, 77 (skip) without chromium
(1 when SWAPPLAN_REQUIRE_CHROMIUM is set: CI installs it).
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

UNSWAPPED = (0x7f, 0x7f, 0x7f)
FIRST_POLICY = (0x1f, 0x77, 0xb4)
BUDGET = (0xd6, 0x27, 0x28)
TIMEOUT_S = 60


def chromium():
    for name in ('chromium', 'chromium-browser', 'google-chrome'):
        path = shutil.which(name)
        if path:
            return path
    return None


def browser(binary, page, extra, workdir):
    """Runs headless Chromium on `page`; returns (stdout, stderr)."""
    args = [binary, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
            '--disable-dev-shm-usage', '--hide-scrollbars', '--user-data-dir=' + workdir + '/profile',
            '--enable-logging=stderr', '--v=0', '--virtual-time-budget=10000'] + extra + [
            'file://' + page]
    r = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=workdir)
    return r.stdout, r.stderr


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA PNG."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError(path + ': not a PNG')
    pos, idat, width = 8, b'', 0
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b'IHDR':
            width, height, depth, color, _, _, interlace = struct.unpack('>IIBBBBB', body)
            if depth != 8 or color not in (2, 6) or interlace != 0:
                raise ValueError('unsupported PNG: depth %d color %d interlace %d' %
                                 (depth, color, interlace))
            channels = 3 if color == 2 else 4
        elif kind == b'IDAT':
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        filt, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if filt == 1:
                line[i] = (line[i] + a) & 0xff
            elif filt == 2:
                line[i] = (line[i] + b) & 0xff
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xff
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xff
        rows.append(line)
        prev = line
    return width, height, rows, channels


def colour_counts(path, colours):
    width, height, rows, channels = png_pixels(path)
    counts = {c: 0 for c in colours}
    for line in rows:
        for x in range(0, width * channels, channels):
            px = (line[x], line[x + 1], line[x + 2])
            if px in counts:
                counts[px] += 1
    return counts


def main():
    argv = sys.argv[1:]
    replay = bool(argv) and argv[0] == '--replay'
    if replay:
        argv = argv[1:]
    if len(argv) < 2:
        print(__doc__)
        return 2
    swapplan, trace, flags = argv[0], argv[1], argv[2:]
    binary = chromium()
    if binary is None:
        if os.environ.get('SWAPPLAN_REQUIRE_CHROMIUM'):
            print('chromium not installed and SWAPPLAN_REQUIRE_CHROMIUM is set')
            return 1
        print('chromium not installed: skipped (scripts/quickstart.sh installs it)')
        return 77
    problems = []
    with tempfile.TemporaryDirectory() as work:
        page = os.path.join(work, 'report.html')
        command = ([swapplan, 'replay', trace, '--html', page, '--rows', 'none', '-q'] if replay
                   else [swapplan, 'report', trace, '-o', page])
        r = subprocess.run(command + flags, capture_output=True, text=True, timeout=TIMEOUT_S)
        if r.returncode != 0:
            print('%s failed (%d): %s' % (' '.join(command[:2]), r.returncode, r.stderr))
            return 1
        dom, log = browser(binary, page, ['--dump-dom'], work)
        status = re.search(r'<body[^>]*data-report-status="([^"]*)"', dom)
        if not status or status.group(1) != 'ok':
            problems.append('page status: %s' % (status.group(1) if status else 'no <body> marker'))
        curves = re.findall(r'<path class="curve" d="M[^"]+" stroke="(#[0-9a-f]{6})"', dom)
        if replay:
            if curves != ['#1f77b4']:
                problems.append('peak curve drawn: %s (want one, #1f77b4)' % curves)
            if len(re.findall(r'<rect [^>]*class="stage-band"', dom)) == 0:
                problems.append('no stage bands')
        elif len(curves) < 2 or curves[0] != '#7f7f7f' or curves[1] != '#1f77b4':
            problems.append('memory curves drawn: %s (want unswapped #7f7f7f, then #1f77b4)' % curves)
        if not replay:
            # Each curve's reserved bytes (the allocator model), dashed, same colour.
            reserved = re.findall(r'<path class="curve reserved" d="M[^"]+" stroke="(#[0-9a-f]{6})"'
                                  r' stroke-dasharray="5 3"', dom)
            if len(reserved) < 2 or reserved[0] != '#7f7f7f':
                problems.append('reserved curves drawn: %s (want unswapped #7f7f7f, then a policy)'
                                % reserved)
        if 'id="budget-line"' not in dom:
            problems.append('no budget line')
        if not replay and len(re.findall(r'<rect [^>]*class="span-op"', dom)) == 0:
            problems.append('no compute spans in the timeline')
        if '<td' not in dom:
            problems.append('no table rows')
        # The page writes nothing to the console: any console line (Chromium
        # logs console.error and uncaught exceptions alike as INFO:CONSOLE)
        # is an error.
        errors = [l for l in log.splitlines() if ':CONSOLE' in l or 'Uncaught' in l]
        if errors:
            problems.append('console errors:\n  ' + '\n  '.join(errors))
        shot = os.path.join(work, 'report.png')
        browser(binary, page, ['--window-size=1100,900', '--screenshot=' + shot], work)
        if not os.path.exists(shot):
            problems.append('no screenshot written')
        else:
            colours = [FIRST_POLICY, BUDGET] if replay else [UNSWAPPED, FIRST_POLICY, BUDGET]
            counts = colour_counts(shot, colours)
            names = {UNSWAPPED: 'unswapped curve',
                     FIRST_POLICY: 'peak curve' if replay else 'first policy curve',
                     BUDGET: 'capacity line' if replay else 'budget line'}
            for colour, n in counts.items():
                # More than a legend swatch (14 x 4 px): the curve itself.
                if n < 300:
                    problems.append('screenshot: %d pixels of the %s colour #%02x%02x%02x' %
                                    ((n, names[colour]) + colour))
            print('screenshot pixels: ' + ', '.join('%s %d' % (names[c], n) for c, n in counts.items()))
    if problems:
        print('FAILED:\n' + '\n'.join(problems))
        return 1
    print('ok: page drawn without console errors, curves in the DOM and on screen')
    return 0


if __name__ == '__main__':
    sys.exit(main())
