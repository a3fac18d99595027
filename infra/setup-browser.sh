#!/usr/bin/env bash
# Headless Chromium for the report tests, installed only with consent: on a terminal `make test` asks first; with
# no terminal, or CI set, it goes ahead and says what it does. Exit 0: a Chromium is on PATH; exit 10: there is
# none and the browser tests are to be skipped (the test summary then says so in one line).
set -u
for name in chromium chromium-browser google-chrome; do
    command -v "$name" >/dev/null 2>&1 && exit 0
done
if [ -n "${SKIP_BROWSER:-}" ]; then
    echo "no Chromium on PATH and SKIP_BROWSER is set: the browser tests will be reported as not run"
    exit 10
fi
echo "no Chromium on PATH: the report tests render pages in it. Installing Debian's chromium with apt-get adds"
echo "about 460 MB (over 100 packages; some system libraries such as systemd and libudev1 may be upgraded)."
echo "To skip: answer no, or run with SKIP_BROWSER=1 (the browser tests are then reported as not run)."
if [ -t 0 ] && [ -z "${CI:-}" ]; then
    read -r -p "Install chromium now? [y/N] " answer
    case "$answer" in
        [yY]*) ;;
        *) echo "not installed: the browser tests will be reported as not run"; exit 10 ;;
    esac
else
    echo "no terminal to ask on (or CI is set): installing"
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium \
    || { $SUDO apt-get update && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }
