package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/agentrl/agentrl/internal/regular"
)

// SingleFileName is the file name of an unsharded checkpoint in a model folder.
const SingleFileName = "model.safetensors"

// TensorInfo describes a stored tensor. File is the path of the
// .safetensors file that holds it.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int64
	File  string
}

// entry locates a tensor's bytes: size bytes at absolute offset off of f.
type entry struct {
	info TensorInfo
	f    *os.File
	off  int64
	size int64
}

// Reader gives lazy access to the tensors of one file or a model folder.
// Its methods are safe for concurrent use until Close.
type Reader struct {
	files    []*os.File
	tensors  map[string]entry
	names    []string
	metadata map[string]string
}

// shard is one opened .safetensors file with its parsed header.
type shard struct {
	path      string
	f         *os.File
	h         header
	dataStart int64
}

// Open opens a .safetensors file, or a model folder: there it uses
// model.safetensors.index.json when present, else model.safetensors, else
// every *.safetensors file in the folder. Only headers are read.
func Open(path string) (*Reader, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open safetensors %s: %w", path, err)
	}
	r := &Reader{tensors: map[string]entry{}, metadata: map[string]string{}}
	if st.IsDir() {
		err = r.openDir(path)
	} else {
		err = r.addFile(path)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	for name := range r.tensors {
		r.names = append(r.names, name)
	}
	sort.Strings(r.names)
	return r, nil
}

// openDir opens the checkpoint files of a model folder.
func (r *Reader) openDir(dir string) error {
	index := filepath.Join(dir, IndexFileName)
	if _, err := os.Stat(index); err == nil {
		return r.addIndexed(index)
	}
	single := filepath.Join(dir, SingleFileName)
	if _, err := os.Stat(single); err == nil {
		return r.addFile(single)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return fmt.Errorf("open safetensors folder %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return fmt.Errorf("open safetensors folder %s: no %s, %s or *.safetensors file", dir, IndexFileName, SingleFileName)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := r.addFile(p); err != nil {
			return err
		}
	}
	return nil
}

// addFile opens a file and makes all its tensors available.
func (r *Reader) addFile(path string) error {
	s, err := r.openShard(path)
	if err != nil {
		return err
	}
	for name := range s.h.tensors {
		if err := r.add(s, name); err != nil {
			return err
		}
	}
	return nil
}

// openShard opens a file, reads and validates its header, and keeps the
// file open for later reads.
func (r *Reader) openShard(path string) (*shard, error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open safetensors %s: %w", path, err)
	}
	r.files = append(r.files, f)
	h, dataStart, err := readHeader(f)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	for k, v := range h.metadata {
		r.metadata[k] = v
	}
	return &shard{path: path, f: f, h: h, dataStart: dataStart}, nil
}

// readHeader reads the length prefix and the JSON header of f and returns
// the header with the file offset where the data section starts.
func readHeader(f *os.File) (header, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return header{}, 0, err
	}
	size := st.Size()
	var prefix [8]byte
	if _, err := io.ReadFull(f, prefix[:]); err != nil {
		return header{}, 0, fmt.Errorf("file is %d bytes, too short for the 8-byte header length", size)
	}
	n := binary.LittleEndian.Uint64(prefix[:])
	if n > maxHeaderBytes || n > uint64(size-8) {
		return header{}, 0, fmt.Errorf("header length %d exceeds the file size %d (truncated or not a safetensors file)", n, size)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(f, buf); err != nil {
		return header{}, 0, fmt.Errorf("read %d-byte header: %w", n, err)
	}
	dataStart := 8 + int64(n)
	h, err := parseHeader(buf, size-dataStart)
	return h, dataStart, err
}

// add makes tensor name of shard s available, refusing a name already
// provided by another file.
func (r *Reader) add(s *shard, name string) error {
	he, ok := s.h.tensors[name]
	if !ok {
		return fmt.Errorf("safetensors %s: tensor %q not found", s.path, name)
	}
	if old, dup := r.tensors[name]; dup {
		return fmt.Errorf("tensor %q is in both %s and %s", name, old.info.File, s.path)
	}
	r.tensors[name] = entry{
		info: TensorInfo{Name: name, DType: he.dtype, Shape: he.shape, File: s.path},
		f:    s.f,
		off:  s.dataStart + he.begin,
		size: he.end - he.begin,
	}
	return nil
}

// Names returns the tensor names, sorted.
func (r *Reader) Names() []string {
	return append([]string(nil), r.names...)
}

// Info describes tensor name; ok is false when there is no such tensor.
func (r *Reader) Info(name string) (TensorInfo, bool) {
	e, ok := r.tensors[name]
	if !ok {
		return TensorInfo{}, false
	}
	info := e.info
	info.Shape = slices.Clone(e.info.Shape)
	return info, true
}

// Bytes reads the raw little-endian bytes of tensor name: exactly
// DType.Size() times the element count.
func (r *Reader) Bytes(name string) ([]byte, error) {
	e, ok := r.tensors[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: no tensor %q", name)
	}
	buf := make([]byte, e.size)
	if _, err := e.f.ReadAt(buf, e.off); err != nil {
		return nil, fmt.Errorf("safetensors %s: read tensor %q (%d bytes at offset %d): %w", e.info.File, name, e.size, e.off, err)
	}
	return buf, nil
}

// BytesRange reads n bytes of tensor name's raw bytes from byte offset off
// (part of a tensor: one expert's rows of a fused tensor).
func (r *Reader) BytesRange(name string, off, n int64) ([]byte, error) {
	e, ok := r.tensors[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: no tensor %q", name)
	}
	if off < 0 || n < 0 || off+n > e.size {
		return nil, fmt.Errorf("safetensors %s: bytes [%d, %d) of tensor %q are outside its %d bytes", e.info.File, off, off+n, name, e.size)
	}
	buf := make([]byte, n)
	if _, err := e.f.ReadAt(buf, e.off+off); err != nil {
		return nil, fmt.Errorf("safetensors %s: read tensor %q (%d bytes at offset %d): %w", e.info.File, name, n, e.off+off, err)
	}
	return buf, nil
}

// Metadata returns the "__metadata__" maps of the opened files, merged.
func (r *Reader) Metadata() map[string]string {
	m := make(map[string]string, len(r.metadata))
	for k, v := range r.metadata {
		m[k] = v
	}
	return m
}

// Close closes the opened files.
func (r *Reader) Close() error {
	var errs []error
	for _, f := range r.files {
		errs = append(errs, f.Close())
	}
	r.files = nil
	return errors.Join(errs...)
}
