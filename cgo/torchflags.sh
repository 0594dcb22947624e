#!/usr/bin/env bash
# torchflags.sh LIBTORCH: the compiler and linker flags that build the shim
# against the CUDA libtorch at LIBTORCH, printed as a make fragment (`make
# cuda` writes it to build/cuda/torch.mk; `make cuda-flags` shows it).
#
# LIBTORCH is either the C++ libtorch archive from pytorch.org unpacked, or
# the torch/ folder of a pip-installed CUDA PyTorch wheel
# (python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))').
# Both hold the headers in include/ and include/torch/csrc/api/include, and
# the libraries in lib/.
#
# It settles, and says in comments how:
#   - the C++ ABI libtorch was built with, which the shim must share
#     (-D_GLIBCXX_USE_CXX11_ABI=0|1; a mismatch compiles and links, then
#     fails when the library is loaded): from TorchConfig.cmake, else from
#     the python whose torch this is, else from libc10.so's symbols;
#   - nccl.h (AGENTRL_NCCL=0|1): libtorch's own include/, the nvidia-nccl
#     wheel beside a pip-installed torch (the header of the library that
#     torch loads), or NCCL_HOME/include;
#   - gloo's headers (AGENTRL_GLOO=0|1): libtorch's own include/, or
#     GLOO_HOME/include.
# What it cannot settle stops it with a message naming where it looked.
#
# Environment: CUDA_HOME (the CUDA toolkit, default /usr/local/cuda);
# NCCL=off or GLOO=off to build without that backend (default auto);
# NCCL_HOME and GLOO_HOME; PYTHON (the python to ask for the ABI).
set -euo pipefail

die() {
	printf 'make cuda: %s\n' "$1" >&2
	shift
	printf '  %s\n' "$@" >&2
	exit 1
}

# first_holding FILE DIR...: prints the first DIR that holds FILE, if any.
first_holding() {
	local file=$1 dir
	shift
	for dir; do
		if [ -f "$dir/$file" ]; then
			echo "$dir"
			break
		fi
	done
}

[ $# -eq 1 ] || die "usage: cgo/torchflags.sh LIBTORCH"
given=$1
if [ ! -f "$given/lib/libtorch_cuda.so" ]; then
	die "no CUDA libtorch found: looked for $given/lib/libtorch_cuda.so" \
		"Pass LIBTORCH=<folder>: the C++ libtorch for your CUDA version from pytorch.org," \
		"unpacked (default third_party/libtorch), or the torch/ folder of a CUDA PyTorch wheel:" \
		"python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))'." \
		"Nothing was built: agentrl never falls back to a CPU binary here."
fi
root=$(cd "$given" && pwd -P)
site=$(dirname "$root")
if [ -f "$root/__init__.py" ]; then kind="a PyTorch wheel's torch/ folder"; else kind="a libtorch archive"; fi

missing=()
for f in lib/libtorch_cuda.so lib/libc10_cuda.so lib/libtorch.so lib/libtorch_cpu.so lib/libc10.so \
	include/torch/csrc/api/include/torch/torch.h; do
	[ -f "$root/$f" ] || missing+=("$root/$f")
done
[ ${#missing[@]} -eq 0 ] || die "the libtorch at $root is incomplete: missing" "${missing[@]}"

cuda=${CUDA_HOME:-/usr/local/cuda}
[ -f "$cuda/include/cuda_runtime_api.h" ] ||
	die "no CUDA headers: looked for $cuda/include/cuda_runtime_api.h" \
		"Install the CUDA toolkit of this libtorch's CUDA version, or pass CUDA_HOME=<its folder>."

# ---- C++ ABI ----
cfg=$root/share/cmake/Torch/TorchConfig.cmake
abi=$(sed -n 's/.*-D_GLIBCXX_USE_CXX11_ABI=\([01]\).*/\1/p' "$cfg" 2>/dev/null | head -n 1) || abi=""
how="-D_GLIBCXX_USE_CXX11_ABI=$abi in $cfg"
# Recent PyTorch (about 2.8 on) no longer writes the flag into TorchConfig.cmake.
pythons=()
if [ -z "$abi" ]; then
	if [ -n "${PYTHON:-}" ]; then
		pythons=("$PYTHON")
	else
		# A wheel's torch/ lives in <prefix>/lib/pythonX.Y/site-packages.
		[ -x "$site/../../../bin/python3" ] && pythons+=("$(cd "$site/../../../bin" && pwd -P)/python3")
		command -v python3 >/dev/null && pythons+=("$(command -v python3)")
	fi
	for py in "${pythons[@]}"; do
		answer=$("$py" -c 'import os, torch
print(os.path.realpath(os.path.dirname(torch.__file__)))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))' 2>/dev/null) || continue
		if [ "$(sed -n 1p <<<"$answer")" = "$root" ]; then
			abi=$(sed -n 2p <<<"$answer")
			how="torch._C._GLIBCXX_USE_CXX11_ABI from $py"
			break
		fi
	done
fi
if [ -z "$abi" ] && symbols=$(nm -D --defined-only "$root/lib/libc10.so" 2>/dev/null) && [ -n "$symbols" ]; then
	# Built with the cxx11 ABI, c10 exports functions taking std::__cxx11::string.
	if grep -q __cxx11 <<<"$symbols"; then abi=1; else abi=0; fi
	how="std::__cxx11 names $([ "$abi" = 1 ] && echo present || echo absent) in $root/lib/libc10.so's symbols"
fi
if [ -z "$abi" ]; then
	asked="no python with this torch (set PYTHON=<the python whose torch this is>)"
	[ ${#pythons[@]} -eq 0 ] || asked="${pythons[*]} for torch._C._GLIBCXX_USE_CXX11_ABI: none has this torch"
	die "cannot tell which C++ ABI the libtorch at $root was built with; looked at" \
		"$cfg: no -D_GLIBCXX_USE_CXX11_ABI" \
		"$asked" \
		"$root/lib/libc10.so: no symbols nm -D can read"
fi

# ---- NCCL ----
inc=("$root/include" "$root/include/torch/csrc/api/include")
case ${NCCL:-auto} in
off)
	nccl=0
	nccl_note="off (NCCL=off): no NCCL backend in this build, dist.backend=nccl fails at start-up"
	;;
auto)
	looked=("$root/include (libtorch's own)" "$site/nvidia/nccl/include (the nvidia-nccl wheel beside a pip-installed torch)")
	dirs=("$root/include" "$site/nvidia/nccl/include")
	if [ -n "${NCCL_HOME:-}" ]; then
		dirs+=("$NCCL_HOME/include")
		looked+=("$NCCL_HOME/include (NCCL_HOME)")
	else
		looked+=("NCCL_HOME/include (NCCL_HOME is not set)")
	fi
	found=$(first_holding nccl.h "${dirs[@]}")
	[ -n "$found" ] || die "no nccl.h for the NCCL backend; looked in" "${looked[@]}" \
		"Use the nccl.h of the NCCL version this libtorch was built with" \
		"(python3 -c 'import torch;print(torch.cuda.nccl.version())'): pass NCCL_HOME=<folder with include/nccl.h>" \
		"(a system one, say /usr/include/nccl.h, only as NCCL_HOME=/usr and only if it is that version)," \
		"or build without the NCCL backend: make cuda NCCL=off."
	version=$(sed -n 's/^#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' "$found/nccl.h" | paste -sd. -)
	nccl=1
	nccl_note="nccl.h ${version:-of unknown version} in $found (looked in ${dirs[*]})"
	[ "$found" = "$root/include" ] || inc+=("$found")
	;;
*) die "NCCL=$NCCL: want auto or off" ;;
esac

# ---- Gloo ----
case ${GLOO:-auto} in
off)
	gloo=0
	gloo_note="off (GLOO=off): no Gloo backend in this build, dist.backend=gloo fails at start-up"
	;;
auto)
	looked=("$root/include (libtorch's own)")
	dirs=("$root/include")
	if [ -n "${GLOO_HOME:-}" ]; then
		dirs+=("$GLOO_HOME/include")
		looked+=("$GLOO_HOME/include (GLOO_HOME)")
	else
		looked+=("GLOO_HOME/include (GLOO_HOME is not set)")
	fi
	found=$(first_holding gloo/config.h "${dirs[@]}")
	[ -n "$found" ] || die "no gloo headers (gloo/config.h) for the Gloo backend; looked in" "${looked[@]}" \
		"PyTorch wheels whose setup.py lists header folders one by one (2.6 and earlier) leave gloo's out." \
		"Pass GLOO_HOME=<folder with include/gloo/config.h> (gloo at the commit of PyTorch's third_party/gloo," \
		"with its generated config.h), or build without the Gloo backend: make cuda GLOO=off."
	gloo=1
	gloo_note="gloo/config.h in $found"
	[ "$found" = "$root/include" ] || inc+=("$found")
	;;
*) die "GLOO=$GLOO: want auto or off" ;;
esac
inc+=("$cuda/include")

cat <<EOF
# cgo/torchflags.sh: the CUDA libtorch at $root ($kind)
# C++ ABI: $abi ($how)
# NCCL: $nccl_note
# Gloo: $gloo_note
# CUDA headers: $cuda/include
TORCH_CPPFLAGS := -D_GLIBCXX_USE_CXX11_ABI=$abi -DAGENTRL_NCCL=$nccl -DAGENTRL_GLOO=$gloo ${inc[*]/#/-I}
TORCH_LDFLAGS := -L$root/lib -Wl,-rpath,$root/lib
EOF
