#!/usr/bin/env bash
# One source of truth for what MRC lab needs on a Debian 12 machine (CI, Vagrant, a user's VM).
# Idempotent: installs only what is missing, starts Open vSwitch (userspace datapath; the kernel
# module is not needed), builds .venv with the system site packages (Mininet comes from Debian).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/setup.sh: must run as root (apt, Open vSwitch, network namespaces); try: sudo make setup" >&2
    exit 1
  fi
}
need_root

# chromium: headless, for the test that loads report.html as a reader's browser does.
APT_PACKAGES="mininet openvswitch-switch openvswitch-common nftables tcpdump tshark iproute2 ethtool
iputils-ping python3-venv python3-dev python3-pip clang llvm libbpf-dev gcc-multilib make procps psmisc
openssl passwd util-linux chromium"

missing=""
for p in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing apt packages:$missing"
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# Open vSwitch: ovsdb-server + ovs-vswitchd, no kernel module (datapath_type=netdev everywhere).
if ! ovs-vsctl --timeout=3 show >/dev/null 2>&1; then
  echo "setup: starting Open vSwitch (userspace datapath)"
  /usr/share/openvswitch/scripts/ovs-ctl start --no-ovs-vswitchd --system-id=random >/dev/null 2>&1 || true
  /usr/share/openvswitch/scripts/ovs-ctl start --no-ovsdb-server --no-monitor >/dev/null 2>&1 || true
  ovs-vsctl --timeout=10 show >/dev/null || { echo "setup: Open vSwitch did not start" >&2; exit 1; }
fi

# sshd for a second server on this machine (emulation/cluster/local_server.py): unpacked from
# Debian's package into build/openssh, not installed, since installing openssh-server starts a
# listening sshd on this machine's own network.
if [ ! -x /usr/sbin/sshd ] && [ ! -x build/openssh/usr/sbin/sshd ]; then
  echo "setup: unpacking sshd into build/openssh"
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download -qq openssh-server 2>/dev/null); then
    apt-get update -qq
    (cd "$tmp" && apt-get download -qq openssh-server 2>/dev/null)
  fi
  mkdir -p build/openssh
  dpkg-deb -x "$tmp"/openssh-server_*.deb build/openssh
  rm -rf "$tmp"
  test -x build/openssh/usr/sbin/sshd || { echo "setup: no sshd in openssh-server's package" >&2; exit 1; }
fi

# Python environment: Mininet is in the system Python, so the venv sees system site packages.
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c "import mininet" 2>/dev/null; then
  rm -rf .venv
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  echo "setup: installing Python dependencies into .venv"
  # pip's output is shown only when it fails (this machine's pip config warns on every package).
  if ! out=$(.venv/bin/python -m pip install -q -e ".[dev]" 2>&1); then
    echo "$out" >&2
    echo "setup: pip install failed" >&2
    exit 1
  fi
  rm -f .venv/.installed-*
  touch "$stamp"
fi

# The transport core compiled from its own .py sources (Cython; build/compiled, never
# committed). Rebuilt only when a source changed; until then, or if this fails, the
# interpreted modules run (traffic/compiled.py says which is in force).
.venv/bin/python scripts/build_core.py

# In-fabric trimming / ECN BPF object: built from source, never committed.
if [ -f emulation/network/bpf/Makefile ]; then
  make -s -C emulation/network/bpf
fi
echo "setup: ok ($ROOT)"
