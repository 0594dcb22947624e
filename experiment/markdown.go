package experiment

import (
	"fmt"
	"sort"
	"strings"
)

// Markdown renders the table: one row per method, EM per hop count and on
// average, as mean ± sample std over seeds.
func (t *Table) Markdown() string {
	hops := append([]int(nil), t.Hops...)
	sort.Ints(hops)
	var b strings.Builder
	b.WriteString("| Method |")
	for _, h := range hops {
		fmt.Fprintf(&b, " %d-hop EM |", h)
	}
	b.WriteString(" Avg EM |\n|---|")
	for range hops {
		b.WriteString("---:|")
	}
	b.WriteString("---:|\n")
	for _, m := range t.Methods {
		fmt.Fprintf(&b, "| %s |", m)
		for _, h := range hops {
			fmt.Fprintf(&b, " %s |", t.EM[m][fmt.Sprintf("hop%d", h)])
		}
		fmt.Fprintf(&b, " %s |\n", t.EM[m]["avg"])
	}
	return b.String()
}

// String renders a cell as "mean ± std" (three decimals).
func (c Cell) String() string {
	if c.N == 0 {
		return "–"
	}
	if c.N == 1 {
		return fmt.Sprintf("%.3f", c.Mean)
	}
	return fmt.Sprintf("%.3f ± %.3f", c.Mean, c.Std)
}
