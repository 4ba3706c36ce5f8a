#!/usr/bin/env python3
"""The installed headers are the library's API, chosen one by one.

`meson install` copies the headers that src/meson.build names (install_subdir
of include/swapplan/<area>, install_headers); a header put there is part of
what users compile against. tests/install/installed_headers.txt lists that set;
this test expands the build's install plan (meson-info/intro-install_plan.json)
into the header files it installs and compares the two, so that a new public
header, or an internal one left in include/, is a decision in the diff of that
list. Internals live next to their sources (src/<area>/..., not installed).

  installed_headers_test.py BUILD_DIR GOLDEN [--update]

Run by `meson test` (suite `layering`, not in a wheel build, which installs
no headers); exits 1 naming each header installed but not listed and each
listed but not installed, 0 when they agree. --update rewrites GOLDEN.
"""
import json
import os
import sys

INCLUDEDIR = '{includedir}/'


def installed_headers(build_dir):
    """Paths below the include directory that `meson install` writes."""
    with open(os.path.join(build_dir, 'meson-info', 'intro-install_plan.json')) as f:
        plan = json.load(f)
    out = set()
    for src, entry in plan.get('install_subdirs', {}).items():
        dest = entry['destination']
        if not dest.startswith(INCLUDEDIR):
            continue
        excluded_dirs = set(entry.get('exclude_dirs', []))
        excluded_files = set(entry.get('exclude_files', []))
        for dirpath, dirnames, filenames in os.walk(src):
            rel_dir = os.path.relpath(dirpath, src)
            dirnames[:] = [d for d in dirnames
                           if os.path.normpath(os.path.join(rel_dir, d)) not in excluded_dirs]
            for name in filenames:
                rel = os.path.normpath(os.path.join(rel_dir, name))
                if rel not in excluded_files:
                    out.add(os.path.join(dest[len(INCLUDEDIR):], rel))
    for key in ('headers', 'data'):
        for entry in plan.get(key, {}).values():
            if entry['destination'].startswith(INCLUDEDIR):
                out.add(entry['destination'][len(INCLUDEDIR):])
    return out


def main():
    build_dir, golden = sys.argv[1], sys.argv[2]
    actual = installed_headers(build_dir)
    if '--update' in sys.argv[3:]:
        with open(golden, 'w') as f:
            f.write(''.join(p + '\n' for p in sorted(actual)))
        print(f'installed_headers: wrote {len(actual)} headers to {golden}')
        return 0
    with open(golden) as f:
        listed = {line.strip() for line in f if line.strip() and not line.startswith('#')}
    problems = [f'installed but not in {os.path.basename(golden)}: {p}'
                for p in sorted(actual - listed)]
    problems += [f'listed in {os.path.basename(golden)} but not installed: {p}'
                 for p in sorted(listed - actual)]
    for p in problems:
        print(p)
    if problems:
        print('a public header is the API: add it to the list on purpose, or move an '
              'internal one next to its sources (src/<area>/)')
    print(f'installed_headers: {len(actual)} installed, {len(listed)} listed, '
          f'{len(problems)} differences')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
