package decoding

// Sampling is how a decode step picks tokens. Temperature <= 0 is greedy;
// TopK <= 0 and TopP >= 1 turn those filters off. The recorded
// log-probability is always log softmax(logits/Temperature) of the chosen
// token, untruncated (Temperature 1 when greedy): the same quantity the
// training forward computes at that temperature. It mirrors torch.Sampling
// field for field, so that this package builds without libtorch
// (torchdecoder converts).
type Sampling struct {
	Temperature float64
	TopK        int
	TopP        float64
}
