#!/usr/bin/env bash
# Install the Debian packages named on the command line that are missing (as root, or through sudo).
# Usage: scripts/ensure-apt.sh [--optional] PACKAGE...
#   --optional: warn instead of failing when a package cannot be installed (tests that need it then skip).
set -u
optional=0
if [ "${1:-}" = "--optional" ]; then optional=1; shift; fi
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "ensure-apt: need root to install: ${missing[*]} (run: sudo apt-get install ${missing[*]})" >&2
    [ $optional = 1 ] && exit 0 || exit 1
  fi
fi
echo "ensure-apt: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; then
  $sudo apt-get update -q >/dev/null 2>&1
  if ! $sudo apt-get install -y -q "${missing[@]}" >/dev/null; then
    echo "ensure-apt: could not install ${missing[*]}" >&2
    [ $optional = 1 ] && exit 0 || exit 1
  fi
fi
