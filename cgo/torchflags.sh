#!/usr/bin/env bash
# torchflags.sh cpu|cuda LIBTORCH: the compiler and linker flags that build
# the shim against the libtorch at LIBTORCH, printed as a make fragment
# (`make` writes it to build/cpu/torch.mk with names CPU_TORCH_*, `make
# cuda` to build/cuda/torch.mk with names CUDA_TORCH_*; `make flags` and
# `make cuda-flags` show them).
#
# LIBTORCH is one of:
#   - a libtorch folder with include/ and lib/: the C++ libtorch archive
#     unpacked, or the torch/ folder of a pip-installed PyTorch wheel
#     (python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))');
#   - a Debian-style prefix (/usr, or the /usr of a root filesystem): headers
#     in include/, libraries in lib/<multiarch triplet>/ (Debian's
#     libtorch-dev and libtorch-cuda-dev).
# The cpu mode takes any libtorch (a CUDA one too: the shim then uses only
# its CPU side); the cuda mode needs libtorch_cuda.
#
# It settles, and says in comments how:
#   - the libtorch version (torch/version.h) and so the C++ standard: C++17,
#     or C++20 from 2.13, whose ATen.h requires it;
#   - the C++ ABI libtorch was built with, which the shim must share
#     (-D_GLIBCXX_USE_CXX11_ABI=0|1; a mismatch compiles and links, then
#     fails when the library is loaded): from TorchConfig.cmake, else from
#     the python whose torch this is, else from libc10.so's symbols;
#   - nccl.h (AGENTRL_NCCL=0|1, cuda mode): libtorch's own include/, the
#     nvidia-nccl wheel beside a pip-installed torch (the header of the
#     library that torch loads), or NCCL_HOME/include;
#   - gloo's headers (AGENTRL_GLOO=0|1): libtorch's own include/, or
#     GLOO_HOME/include.
# The include folders are passed with -isystem: warnings in libtorch's,
# CUDA's, NCCL's and gloo's headers are theirs (2.11's CUDAEvent.h trips
# -Winterference-size), and -Werror then holds our sources alone to zero.
# What it cannot settle stops it with a message naming where it looked.
#
# Environment: CUDA_HOME (the CUDA toolkit's headers, cuda mode; by default
# those of the nvidia-* wheels beside a wheel's torch, Debian's, or
# /usr/local/cuda); NCCL=off or GLOO=off to build without that backend (default auto);
# NCCL_HOME and GLOO_HOME; PYTHON (the python to ask for the ABI).
set -euo pipefail

die() {
	printf 'make: %s\n' "$1" >&2
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

[ $# -eq 2 ] || die "usage: cgo/torchflags.sh cpu|cuda LIBTORCH"
mode=$1
given=$2
case $mode in cpu | cuda) ;; *) die "cgo/torchflags.sh: mode $mode: want cpu or cuda" ;; esac
[ -d "$given" ] || die "LIBTORCH=$given is not a folder" \
	"Pass LIBTORCH=<folder>: a libtorch archive unpacked, the torch/ folder of a PyTorch wheel" \
	"(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))'), or a Debian prefix such as /usr."
root=$(cd "$given" && pwd -P)
# The library folder: lib/ (archive, wheel) or lib/<triplet>/ (Debian).
triplet=$( (gcc -print-multiarch || dpkg-architecture -qDEB_HOST_MULTIARCH) 2>/dev/null | head -n 1) || triplet=""
lib=libtorch_cpu.so
[ "$mode" = cpu ] || lib=libtorch_cuda.so
libdir=$(first_holding $lib "$root/lib" ${triplet:+"$root/lib/$triplet"})
looked="looked for $root/lib/$lib"
[ -z "$triplet" ] || looked+=" and $root/lib/$triplet/$lib (the Debian layout)"
if [ -z "$libdir" ] && [ "$mode" = cuda ]; then
	die "no CUDA libtorch found: $looked" \
		"Pass LIBTORCH=<folder>: the C++ libtorch for your CUDA version unpacked (default third_party/libtorch)," \
		"the torch/ folder of a CUDA PyTorch wheel" \
		"(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))'), or a Debian prefix with libtorch-cuda-dev." \
		"Nothing was built: agentrl never falls back to a CPU binary here."
fi
[ -n "$libdir" ] || die "no libtorch found: $looked" \
	"Pass LIBTORCH=<folder>: a libtorch archive unpacked, the torch/ folder of a PyTorch wheel" \
	"(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))'), or a Debian prefix such as /usr" \
	"(apt-get install libtorch-dev). Nothing was built."
site=$(dirname "$root")
if [ -f "$root/__init__.py" ]; then
	kind="a PyTorch wheel's torch/ folder"
elif [ "$libdir" != "$root/lib" ]; then
	kind="a Debian-style prefix"
else
	kind="a libtorch archive"
fi

needed=(libtorch.so libtorch_cpu.so libc10.so)
[ "$mode" = cpu ] || needed+=(libtorch_cuda.so libc10_cuda.so)
missing=()
for f in "${needed[@]}"; do
	[ -f "$libdir/$f" ] || missing+=("$libdir/$f")
done
for f in torch/csrc/api/include/torch/torch.h torch/csrc/api/include/torch/version.h; do
	[ -f "$root/include/$f" ] || missing+=("$root/include/$f")
done
[ ${#missing[@]} -eq 0 ] || die "the libtorch at $root is incomplete: missing" "${missing[@]}"

# ---- version and C++ standard ----
# torch/version.h defines them itself, or (2.9 on) includes
# torch/headeronly/version.h, which does.
vh=$root/include/torch/csrc/api/include/torch/version.h
[ ! -f "$root/include/torch/headeronly/version.h" ] || vh="$vh $root/include/torch/headeronly/version.h"
major=$(sed -n 's/^#define TORCH_VERSION_MAJOR *\([0-9]*\).*/\1/p' $vh | head -n 1)
minor=$(sed -n 's/^#define TORCH_VERSION_MINOR *\([0-9]*\).*/\1/p' $vh | head -n 1)
[ -n "$major" ] && [ -n "$minor" ] || die "cannot read TORCH_VERSION_MAJOR/MINOR from $vh"
if [ "$major" -gt 2 ] || { [ "$major" -eq 2 ] && [ "$minor" -ge 13 ]; }; then
	std=c++20
	std_note="libtorch $major.$minor's ATen.h requires C++20"
else
	std=c++17
	std_note="libtorch $major.$minor builds with C++17"
fi

# The CUDA headers: CUDA_HOME when given; else the toolkit headers of the
# nvidia-* wheels beside a pip-installed torch (nvidia/cu13 from CUDA 13,
# nvidia/cuda_runtime for CUDA 12: the version torch was built with), the
# prefix itself for Debian's nvidia-cuda-toolkit, then /usr/local/cuda.
cuda=""
if [ "$mode" = cuda ]; then
	if [ -n "${CUDA_HOME:-}" ]; then
		homes=("$CUDA_HOME")
	else
		homes=("$site/nvidia/cu13" "$site/nvidia/cuda_runtime")
		[ "$libdir" = "$root/lib" ] || homes+=("$root")
		homes+=(/usr/local/cuda)
	fi
	for home in "${homes[@]}"; do
		if [ -f "$home/include/cuda_runtime_api.h" ]; then
			cuda=$home
			break
		fi
	done
	[ -n "$cuda" ] || die "no CUDA headers: looked for include/cuda_runtime_api.h in" "${homes[@]}" \
		"Install the CUDA toolkit of this libtorch's CUDA version, or pass CUDA_HOME=<its folder>."
fi

# ---- C++ ABI ----
cfg=$(first_holding TorchConfig.cmake "$root/share/cmake/Torch" "$libdir/cmake/Torch")
cfg=${cfg:-$root/share/cmake/Torch}/TorchConfig.cmake
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
if [ -z "$abi" ] && symbols=$(nm -D --defined-only "$libdir/libc10.so" 2>/dev/null) && [ -n "$symbols" ]; then
	# Built with the cxx11 ABI, c10 exports functions taking std::__cxx11::string.
	if grep -q __cxx11 <<<"$symbols"; then abi=1; else abi=0; fi
	how="std::__cxx11 names $([ "$abi" = 1 ] && echo present || echo absent) in $libdir/libc10.so's symbols"
fi
if [ -z "$abi" ]; then
	asked="no python with this torch (set PYTHON=<the python whose torch this is>)"
	[ ${#pythons[@]} -eq 0 ] || asked="${pythons[*]} for torch._C._GLIBCXX_USE_CXX11_ABI: none has this torch"
	die "cannot tell which C++ ABI the libtorch at $root was built with; looked at" \
		"$cfg: no -D_GLIBCXX_USE_CXX11_ABI" \
		"$asked" \
		"$libdir/libc10.so: no symbols nm -D can read"
fi

# ---- NCCL ----
# /usr/include is the compiler's own: naming it with -I would reorder the
# system headers.
inc=()
[ "$root" = /usr ] || inc+=("$root/include")
inc+=("$root/include/torch/csrc/api/include")
[ "$mode" = cuda ] || NCCL=cpu
case ${NCCL:-auto} in
cpu)
	nccl=0
	nccl_note="none (a CPU build)"
	;;
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
	[ "$found" = "$root/include" ] || [ "$found" = /usr/include ] || inc+=("$found")
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
		"with its generated config.h), or build without the Gloo backend: make GLOO=off (make cuda GLOO=off)."
	gloo=1
	gloo_note="gloo/config.h in $found"
	[ "$found" = "$root/include" ] || [ "$found" = /usr/include ] || inc+=("$found")
	;;
*) die "GLOO=$GLOO: want auto or off" ;;
esac
cuda_note="none (a CPU build)"
if [ "$mode" = cuda ]; then
	[ "$cuda" = /usr ] || inc+=("$cuda/include")
	cuda_note="$cuda/include"
	# CUDA 13 moved libcu++ and the rest of CCCL (nv/target, cuda/std) to
	# include/cccl, which nvcc adds by itself and g++ must be told.
	if [ -d "$cuda/include/cccl" ]; then
		inc+=("$cuda/include/cccl")
		cuda_note+=" and $cuda/include/cccl"
	fi
fi
# The system's library folder needs no run path.
ldflags="-L$libdir"
prefix=$(tr '[:lower:]' '[:upper:]' <<<"$mode")_TORCH
case $libdir in /usr/lib | /usr/lib/"$triplet") ;; *) ldflags+=" -Wl,-rpath,$libdir" ;; esac

cat <<EOF
# cgo/torchflags.sh $mode: libtorch $major.$minor at $root ($kind), libraries in $libdir
# C++ standard: $std ($std_note)
# C++ ABI: $abi ($how)
# NCCL: $nccl_note
# Gloo: $gloo_note
# CUDA headers: $cuda_note
${prefix}_LIBTORCH := $root
${prefix}_VERSION := $major.$minor
${prefix}_CXXSTD := -std=$std
${prefix}_CPPFLAGS := -D_GLIBCXX_USE_CXX11_ABI=$abi -DAGENTRL_NCCL=$nccl -DAGENTRL_GLOO=$gloo ${inc[*]/#/-isystem}
${prefix}_LDFLAGS := $ldflags
EOF
