#!/bin/sh
# Install the Debian 12 packages mhagen needs to build, test and benchmark.
# Only packages that are missing are installed; run as root (or with sudo).
set -eu

PKGS="build-essential pkg-config clang lld liblua5.4-dev libcriterion-dev
      qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross libopenblas-dev
      libomp-dev valgrind gnuplot-nox cmake meson ninja-build
      python3 python3-numpy python3-pip python3-venv linux-perf llvm"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	SUDO="sudo"
fi

echo "install-deps: installing$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
