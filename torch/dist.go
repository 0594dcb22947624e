package torch

// #include <stdlib.h>
// #include "agentrl.h"
// #include "internal.h"
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// KVStore is a client (or, on rank 0, the server) of c10d's TCPStore: the
// key-value store ranks meet at (rendezvous) and exchange small values
// through (heartbeats). Its methods may be called from any goroutine.
type KVStore struct {
	h C.ar_kvstore
}

// NewKVStore connects to the TCPStore at host:port, serving it when server
// is set. With world > 0 it waits until world ranks have connected; with 0
// it is an extra client that does not count as a rank. Every operation
// gives up after timeout. A non-empty prefix goes before every key (a
// store shared with a launcher).
func NewKVStore(host string, port int, server bool, world int, timeout time.Duration, prefix string) (*KVStore, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	ch := C.CString(host)
	defer C.free(unsafe.Pointer(ch))
	cp := C.CString(prefix)
	defer C.free(unsafe.Pointer(cp))
	var out C.ar_kvstore
	var msg *C.char
	rc := C.ar_store_new(ch, C.int(port), cbool(server), C.int(world), C.int64_t(timeout.Milliseconds()), cp, &out, &msg)
	if err := check("store", rc, msg); err != nil {
		return nil, err
	}
	return &KVStore{h: out}, nil
}

// Close disconnects (and stops serving, on the server).
func (s *KVStore) Close() {
	if s != nil && s.h != nil {
		C.ar_store_free(s.h)
		s.h = nil
	}
}

// Add adds delta to the counter key and returns its new value; Add(key, 0)
// reads it.
func (s *KVStore) Add(key string, delta int64) (int64, error) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var v C.int64_t
	var msg *C.char
	if err := check("store add "+key, C.ar_store_add(s.h, ck, C.int64_t(delta), &v, &msg), msg); err != nil {
		return 0, err
	}
	return int64(v), nil
}

// Set stores value under key.
func (s *KVStore) Set(key string, value []byte) error {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var p unsafe.Pointer
	if len(value) > 0 {
		p = C.CBytes(value)
		defer C.free(p)
	}
	var msg *C.char
	return check("store set "+key, C.ar_store_set(s.h, ck, p, C.size_t(len(value)), &msg), msg)
}

// Get waits (up to the store's timeout) for key and returns its value.
func (s *KVStore) Get(key string) ([]byte, error) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var p unsafe.Pointer
	var n C.size_t
	var msg *C.char
	if err := check("store get "+key, C.ar_store_get(s.h, ck, &p, &n, &msg), msg); err != nil {
		return nil, err
	}
	defer C.free(p)
	return C.GoBytes(p, C.int(n)), nil
}

// Backend is a collective-communication library of c10d.
type Backend int

// The backends: Gloo for CPU tensors, NCCL for CUDA tensors.
const (
	Gloo Backend = C.AR_GLOO
	NCCL Backend = C.AR_NCCL
)

func (b Backend) String() string {
	if b == NCCL {
		return "nccl"
	}
	return "gloo"
}

// Network says which network device Gloo binds to.
type Network struct {
	Interface string // a network interface name (GLOO_SOCKET_IFNAME), or
	Host      string // an address or host name to bind to, or neither:
	// the address this machine's hostname resolves to (loopback if none)
}

// ReduceOp combines values across ranks.
type ReduceOp int

// Reductions for Group.AllReduce.
const (
	Sum ReduceOp = C.AR_RED_SUM
	Max ReduceOp = C.AR_RED_MAX
	Min ReduceOp = C.AR_RED_MIN
)

// Group is a c10d process group: the ranks of a data-parallel job and the
// collectives between them. Like every libtorch call, its collectives
// belong on the device worker's goroutine, and every rank must call the
// same collectives in the same order.
type Group struct {
	h           C.ar_dist
	rank, world int
}

// NewGroup makes the process group of world ranks that meet at s, with
// collectives that fail after timeout. dev is where collective buffers
// live: the CPU for Gloo, the rank's GPU for NCCL.
func NewGroup(s *KVStore, b Backend, rank, world int, dev Device, net Network, timeout time.Duration) (*Group, error) {
	kind, where := C.AR_NET_DEFAULT, ""
	switch {
	case net.Interface != "":
		kind, where = C.AR_NET_INTERFACE, net.Interface
	case net.Host != "":
		kind, where = C.AR_NET_HOST, net.Host
	}
	cw := C.CString(where)
	defer C.free(unsafe.Pointer(cw))
	var out C.ar_dist
	var msg *C.char
	rc := C.ar_dist_new(s.h, C.int(b), C.int(rank), C.int(world), C.int64_t(timeout.Milliseconds()), C.int(dev.code()), C.int(kind), cw, &out, &msg)
	if err := check(b.String()+" process group", rc, msg); err != nil {
		return nil, err
	}
	return &Group{h: out, rank: rank, world: world}, nil
}

// Close releases the group.
func (g *Group) Close() {
	if g != nil && g.h != nil {
		C.ar_dist_free(g.h)
		g.h = nil
	}
}

// Rank is this process's rank.
func (g *Group) Rank() int { return g.rank }

// World is the number of ranks.
func (g *Group) World() int { return g.world }

// AllReduceGrads sums the gradients of params over all ranks in flat
// buckets of at most bucketBytes; afterwards every rank holds the same sum.
// A parameter no rank has a gradient for keeps none.
func (g *Group) AllReduceGrads(params []*Tensor, bucketBytes int64) error {
	hs, free, err := tensorHandles("allreduce_grads", params)
	if err != nil {
		return err
	}
	defer free()
	var msg *C.char
	return check("allreduce_grads", C.ar_dist_allreduce_grads(g.h, hs, C.int(len(params)), C.int64_t(bucketBytes), &msg), msg)
}

// AllReduce reduces vals over all ranks, in place.
func (g *Group) AllReduce(vals []float64, op ReduceOp) error {
	if len(vals) == 0 {
		return nil
	}
	c := (*C.double)(C.malloc(C.size_t(len(vals)) * 8))
	defer C.free(unsafe.Pointer(c))
	cs := unsafe.Slice(c, len(vals))
	for i, v := range vals {
		cs[i] = C.double(v)
	}
	var msg *C.char
	if err := check("allreduce", C.ar_dist_allreduce_f64(g.h, c, C.int(len(vals)), C.int(op), &msg), msg); err != nil {
		return err
	}
	for i := range vals {
		vals[i] = float64(cs[i])
	}
	return nil
}

// AllGather returns every rank's data, indexed by rank.
func (g *Group) AllGather(data []byte) ([][]byte, error) {
	var in unsafe.Pointer
	if len(data) > 0 {
		in = C.CBytes(data)
		defer C.free(in)
	}
	sizes := (*C.int64_t)(C.malloc(C.size_t(g.world) * 8))
	defer C.free(unsafe.Pointer(sizes))
	var out unsafe.Pointer
	var msg *C.char
	if err := check("allgather", C.ar_dist_allgather(g.h, in, C.int64_t(len(data)), &out, sizes, &msg), msg); err != nil {
		return nil, err
	}
	defer C.free(out)
	all := C.GoBytes(out, C.int(sumSizes(unsafe.Slice(sizes, g.world))))
	parts := make([][]byte, g.world)
	off := 0
	for r, n := range unsafe.Slice(sizes, g.world) {
		parts[r] = all[off : off+int(n) : off+int(n)]
		off += int(n)
	}
	return parts, nil
}

func sumSizes(s []C.int64_t) int {
	t := 0
	for _, n := range s {
		t += int(n)
	}
	if t > 1<<31-1 {
		panic(fmt.Sprintf("allgather: %d bytes", t))
	}
	return t
}

// Broadcast overwrites ts on every rank with root's (in place, outside
// autograd): the way ranks start from the same weights.
func (g *Group) Broadcast(ts []*Tensor, root int) error {
	hs, free, err := tensorHandles("broadcast", ts)
	if err != nil {
		return err
	}
	defer free()
	var msg *C.char
	return check("broadcast", C.ar_dist_broadcast(g.h, hs, C.int(len(ts)), C.int(root), &msg), msg)
}

// Barrier returns when every rank has reached it.
func (g *Group) Barrier() error {
	var msg *C.char
	return check("barrier", C.ar_dist_barrier(g.h, &msg), msg)
}

// ncclHeaderCheck is the check NewProcessGroup makes before an NCCL group:
// an error unless the nccl.h of NCCL major.minor the shim was compiled with
// is the NCCL libtorch was built with (torchVersion as
// torch::cuda::nccl::version() encodes it: major<<32 | minor<<16 | patch).
func ncclHeaderCheck(major, minor int, torchVersion uint64) error {
	var msg *C.char
	return check("nccl_header_check", C.ar_nccl_header_check(C.int(major), C.int(minor), C.uint64_t(torchVersion), &msg), msg)
}
