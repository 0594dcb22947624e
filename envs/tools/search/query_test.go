package search

import (
	"slices"
	"testing"
)

func TestTerms(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{`"`, nil},
		{``, nil},
		{`(((`, nil},
		{`*:^-+`, nil},
		{`AND OR NOT`, []string{"and", "or", "not"}},
		{`title:x`, []string{"title", "x"}},
		{`a*`, []string{"a"}},
		{`NEAR(a b, 2)`, []string{"near", "a", "b", "2"}},
		{`Who is Lennon's wife? Lennon`, []string{"who", "is", "lennon", "s", "wife"}},
		{`Café CAFÉ`, []string{"café"}},
	}
	for _, c := range cases {
		if got := Terms(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Terms(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTermsCapped(t *testing.T) {
	var q []byte
	for i := range 100 {
		q = append(q, []byte(" w"+string(rune('a'+i%26))+string(rune('a'+i/26)))...)
	}
	if got := len(Terms(string(q))); got != maxTerms {
		t.Fatalf("len(Terms(100 distinct words)) = %d, want %d", got, maxTerms)
	}
}

func TestMatchExpr(t *testing.T) {
	if got, want := matchExpr([]string{"and", "title", "x"}), `"and" OR "title" OR "x"`; got != want {
		t.Fatalf("matchExpr = %s, want %s", got, want)
	}
}

func TestContentDropsStopwordsUnlessNothingLeft(t *testing.T) {
	if got := content(Terms("Who is the wife of John Lennon?")); !slices.Equal(got, []string{"wife", "john", "lennon"}) {
		t.Errorf("content = %q, want [wife john lennon]", got)
	}
	if got := content(Terms("The Who")); !slices.Equal(got, []string{"the", "who"}) {
		t.Errorf("content = %q, want [the who]", got)
	}
}
