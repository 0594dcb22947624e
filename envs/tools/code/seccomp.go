package code

import (
	"encoding/binary"
	"fmt"
	"runtime"
)

// The seccomp filter of the sandbox refuses, with EPERM, the system calls
// that make anonymous shared memory outside every limit the sandbox sets:
// memfd_create and memfd_secret (a file of RAM, counted neither in
// RLIMIT_AS once unmapped nor in the tmpfs of disk_mb) and shmget (SysV
// segments outlive their mappings). System calls of another ABI than the
// native one (i386 through int 0x80, x32) are refused too, as their
// numbers differ.

// blocked are the refused system calls' numbers per GOARCH, and the
// native audit arch (linux/audit.h; numbers from the kernel's syscall
// tables: arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h).
var blocked = map[string]struct {
	arch     uint32
	x32      bool // the x32 ABI (numbers with bit 30 set) exists
	syscalls []uint32
}{
	"amd64": {0xc000003e, true, []uint32{319, 447, 29}}, // memfd_create, memfd_secret, shmget
	"arm64": {0xc00000b7, false, []uint32{279, 447, 194}},
}

// Classic BPF and seccomp constants (linux/filter.h, linux/seccomp.h).
const (
	bpfLdAbsW  = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK    = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgeK    = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	bpfRetK    = 0x06 // BPF_RET | BPF_K
	retAllow   = 0x7fff0000
	retErrno   = 0x00050000
	eperm      = 1
	x32Bit     = 0x40000000
	offsetNr   = 0 // struct seccomp_data: int nr
	offsetArch = 4 // __u32 arch
)

// seccompFilter is the filter as bwrap's --seccomp reads it: an array of
// struct sock_filter {u16 code; u8 jt, jf; u32 k} in the host's byte order.
func seccompFilter() ([]byte, error) {
	b, ok := blocked[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("the sandbox has no seccomp filter for %s (only amd64 and arm64)", runtime.GOARCH)
	}
	type insn struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	// deny is the last instruction; a jump's offset counts from the next.
	prog := []insn{{bpfLdAbsW, 0, 0, offsetArch}, {bpfJeqK, 0, 0, b.arch}, {bpfLdAbsW, 0, 0, offsetNr}}
	if b.x32 {
		prog = append(prog, insn{bpfJgeK, 0, 0, x32Bit})
	}
	for _, nr := range b.syscalls {
		prog = append(prog, insn{bpfJeqK, 0, 0, nr})
	}
	prog = append(prog, insn{bpfRetK, 0, 0, retAllow}, insn{bpfRetK, 0, 0, retErrno | eperm})
	deny := len(prog) - 1
	for i := range prog {
		switch {
		case i == 1: // not the native arch: deny
			prog[i].jf = uint8(deny - i - 1)
		case prog[i].code == bpfJeqK || prog[i].code == bpfJgeK:
			prog[i].jt = uint8(deny - i - 1)
		}
	}
	out := make([]byte, 0, 8*len(prog))
	for _, p := range prog {
		out = binary.NativeEndian.AppendUint16(out, p.code)
		out = append(out, p.jt, p.jf)
		out = binary.NativeEndian.AppendUint32(out, p.k)
	}
	return out, nil
}
