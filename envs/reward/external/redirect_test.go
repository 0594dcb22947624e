package external

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// A reward URL that redirects (307, which re-posts the body) to another
// origin is not followed: the episode, with its gold answers, never
// reaches the other origin, and the score fails saying why. A redirect
// within the origin is followed.
func TestHTTPRedirectStaysWithinTheOrigin(t *testing.T) {
	var got []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
		io.WriteString(w, `{"reward": 1}`)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
		case "/here":
			http.Redirect(w, r, "/score", http.StatusTemporaryRedirect)
		default:
			io.WriteString(w, `{"reward": 0.25}`)
		}
	}))
	defer srv.Close()
	ep := envs.ScoredEpisode{TaskID: "q1", Question: "Capital of France?", Gold: []string{"Paris"}, Answer: "Lyon"}
	if _, _, err := (HTTP{URL: srv.URL + "/away"}).Score(context.Background(), ep); err == nil || !strings.Contains(err.Error(), "redirect to another origin") {
		t.Errorf("a redirect to another origin: %v, want a refusal", err)
	}
	if len(got) > 0 {
		t.Errorf("the other origin received %q", got)
	}
	if r, _, err := (HTTP{URL: srv.URL + "/here"}).Score(context.Background(), ep); err != nil || r != 0.25 {
		t.Errorf("a redirect within the origin: %v, %v", r, err)
	}
}
