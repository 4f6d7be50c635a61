#!/usr/bin/env bash
# Sets virtbench up on a fresh Debian/Ubuntu machine and runs the default campaign.
#   ./install.sh            install everything, then `virtbench run` (the default campaign)
#   ./install.sh --no-run   install everything only
#   --offline               no package index, no apt: Python packages from ./wheelhouse (a
#                           fleet ships it), Debian packages are the host's business
#                           (`virtbench doctor` names what is missing); implies --no-run
#   --venv DIR              the virtualenv (default /opt/virtbench/venv; only the default
#                           is linked as /usr/local/bin/virtbench)
# Idempotent: packages already present and images already built are not redone.
set -euo pipefail
orig_args=("$@")

run_campaign=1
offline=0
default_venv=/opt/virtbench/venv
venv=$default_venv
usage="usage: $0 [--no-run] [--offline] [--venv DIR]"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-run) run_campaign=0 ;;
    --offline) offline=1; run_campaign=0 ;;
    --venv) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; venv=$2; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "virtbench needs root (containers, VMs, cgroups, SCHED_FIFO); run $0 as root" >&2
    exit 1
  fi
  echo "virtbench needs root (containers, VMs, cgroups, SCHED_FIFO); re-running with sudo" >&2
  exec sudo "$0" "${orig_args[@]}"
fi

here=$(cd "$(dirname "$0")" && pwd)
export DEBIAN_FRONTEND=noninteractive
wheels="$here/wheelhouse"

if [ "$offline" = 1 ]; then
  # the wheels are for one Python (the controller's): say so rather than let pip guess
  if [ ! -f "$wheels/PYTHON" ]; then
    echo "install.sh --offline: no wheelhouse in $here (virtbench fleet ships one)" >&2
    exit 1
  fi
  if [ ! -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null; then
    echo "install.sh --offline: /usr/bin/python3 with venv and ensurepip is missing;" \
      "install Debian's python3-venv on this host" >&2
    exit 1
  fi
  have=$(/usr/bin/python3 -c 'import platform, sys; print(f"{sys.version_info[0]}.{sys.version_info[1]} {platform.machine()}")')
  want_py=$(cat "$wheels/PYTHON")
  if [ "$have" != "$want_py" ]; then
    echo "install.sh --offline: the wheelhouse is for Python $want_py, this host has $have;" \
      "drive the fleet from a controller with Python $have, or give this host an index" >&2
    exit 1
  fi
fi

# Debian's own python3 (not a pyenv/conda one on PATH): the venv must survive user changes.
if [ "$offline" = 0 ] && { ! /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null || [ ! -x /usr/bin/python3 ]; }; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends python3 python3-venv python3-pip
fi
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
# PostgreSQL's server programs: the store tests and bench/store_pg.py start a throwaway
# cluster of their own. Debian's package also creates and starts a default cluster; it is
# dropped at once when installed here, so no database server stays running on a measured host.
if [ "$offline" = 0 ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends postgresql
  for version in $(pg_lsclusters -h 2>/dev/null | awk '$2 == "main" {print $1}'); do
    pg_dropcluster --stop "$version" main
  done
fi
# a re-run from the same tree with the same dependencies skips pip: seconds, no index needed
# (virtbench fleet runs this on every host at every fleet run)
stamp="$venv/.virtbench-installed"
want="$here $(sha256sum "$here/pyproject.toml" | cut -d' ' -f1) offline=$offline"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! "$venv/bin/python" -c 'import virtbench.cli' 2>/dev/null; then
  if [ "$offline" = 1 ]; then
    # the build (setuptools) and every dependency from the shipped wheels, no index
    "$venv/bin/pip" install -q --no-index --find-links "$wheels" -e "$here"
  else
    "$venv/bin/pip" install -q --upgrade pip >/dev/null
    "$venv/bin/pip" install -q -e "$here[dev]"
  fi
  echo "$want" >"$stamp"
fi
if [ "$venv" = "$default_venv" ]; then
  ln -sf "$venv/bin/virtbench" /usr/local/bin/virtbench
fi

if [ "$offline" = 1 ]; then
  # no apt here: name what is missing (the host's own business), fail on nothing
  "$venv/bin/virtbench" doctor || true
  exit 0
fi
# Debian packages of every tool, then images (root filesystem, VM image) and probes.
"$venv/bin/virtbench" setup

if [ "$run_campaign" = 1 ]; then
  "$venv/bin/virtbench" run
fi
