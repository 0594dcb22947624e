// Package packing lays out the segments of one episode (see trainer/rollout's
// env.context) as one sequence without repeating what they share: the
// segments' tokens form a prefix tree, each tree node is one packed token,
// a token attends to its ancestors and itself only, and its position is
// its depth, the position it had in every segment that holds it. A
// forward over the packed sequence gives every segment's tokens the
// hidden states the segment alone would give them, so the log-probability
// of a segment's token t is read at the packed token of its t-1 (Target).
package packing

// Layout is the prefix tree of some token sequences, in packed order: a
// node comes after its parent, the sequences' nodes in the order they are
// added.
type Layout struct {
	IDs       []int32 // the token of each packed position
	Positions []int   // its position in the sequences that hold it (its depth)
	Parent    []int   // the packed index of its parent, -1 for a first token
	// Node[s][t] is the packed index of token t of sequence s.
	Node [][]int
}

// Pack lays out seqs as one prefix tree: a token is shared by the
// sequences whose prefixes through it are equal.
func Pack(seqs [][]int32) Layout {
	var l Layout
	children := map[[2]int]int{} // (parent+1, token) -> node
	for _, s := range seqs {
		nodes := make([]int, len(s))
		parent := -1
		for t, tok := range s {
			key := [2]int{parent + 1, int(tok)}
			n, ok := children[key]
			if !ok {
				n = len(l.IDs)
				children[key] = n
				l.IDs = append(l.IDs, tok)
				l.Positions = append(l.Positions, t)
				l.Parent = append(l.Parent, parent)
			}
			nodes[t] = n
			parent = n
		}
		l.Node = append(l.Node, nodes)
	}
	return l
}

// Len is the number of packed tokens.
func (l Layout) Len() int { return len(l.IDs) }

// Allowed is the attention mask, row-major [Len x Len]: 1 where query i
// may attend key j, i.e. j is i or one of its ancestors.
func (l Layout) Allowed() []uint8 {
	n := l.Len()
	m := make([]uint8, n*n)
	for i := range n {
		if p := l.Parent[i]; p >= 0 {
			copy(m[i*n:i*n+p+1], m[p*n:p*n+p+1])
		}
		m[i*n+i] = 1
	}
	return m
}

// Target is where token t >= 1 of sequence s is predicted: at the packed
// position of its predecessor.
func (l Layout) Target(s, t int) (src int, tok int32, pos int) {
	return l.Node[s][t-1], l.IDs[l.Node[s][t]], l.Node[s][t]
}
