// Package buildcheck tests the build itself rather than Go code: that
// `make cuda` refuses clearly without a CUDA libtorch, that the CUDA-only
// Go paths compile, and that the Dockerfile installs each library where the
// one loading it looks. It has no API.
package buildcheck
