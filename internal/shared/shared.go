// Package shared locates the project's shared fixtures and data (the
// ../shared folder beside the repository) for tests, and skips a test
// cleanly when they are absent.
package shared

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared folder: $AGENTRL_SHARED when set, else ../shared
// beside the module root. It returns "" when neither exists.
func Dir() string {
	if d := os.Getenv("AGENTRL_SHARED"); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
		return ""
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			s := filepath.Join(filepath.Dir(d), "shared")
			if st, err := os.Stat(s); err == nil && st.IsDir() {
				return s
			}
			return ""
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Path returns a path inside the shared folder, or skips the test with a
// message naming what is missing.
func Path(t testing.TB, rel ...string) string {
	t.Helper()
	d := Dir()
	if d == "" {
		t.Skip("shared fixtures not found (expected ../shared beside the repository or $AGENTRL_SHARED): skipping")
	}
	p := filepath.Join(append([]string{d}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared fixture %s is absent: skipping", p)
	}
	return p
}
