package tokenizer

// wordLevel maps each piece to its vocabulary id, or to the unknown token.
type wordLevel struct {
	vocab map[string]int32
	unkID int32
}

func (m *wordLevel) encode(dst []int32, piece string) []int32 {
	if id, ok := m.vocab[piece]; ok {
		return append(dst, id)
	}
	return append(dst, m.unkID)
}
