package torch

import "testing"

// BenchmarkTinyOpOverhead measures one elementwise op on a 1-element tensor
// through cgo, including creating and freeing the result.
func BenchmarkTinyOpOverhead(b *testing.B) {
	x, _ := FromFloat32([]float32{1}, 1)
	defer x.Free()
	s := NewScope()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		y := s.Neg(x)
		s.Keep(y)
		y.Free()
	}
	if s.Err() != nil {
		b.Fatal(s.Err())
	}
}

// BenchmarkMatmul512 is a 512x512 f32 matrix product.
func BenchmarkMatmul512(b *testing.B) {
	SetThreads(2)
	data := make([]float32, 512*512)
	for i := range data {
		data[i] = float32(i%7) * 0.1
	}
	x, _ := FromFloat32(data, 512, 512)
	defer x.Free()
	s := NewScope()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		y := s.Matmul(x, x)
		s.Keep(y)
		y.Free()
	}
	b.ReportMetric(2*512*512*512/(b.Elapsed().Seconds()/float64(b.N))/1e9, "GFLOP/s")
}
