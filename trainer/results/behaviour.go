package results

import (
	"fmt"
	"strconv"

	"github.com/agentrl/agentrl/trainer/store"
)

// Behaviour is how a method searched on its in-domain evaluation episodes
// (each stored trajectory an episode): Searches is the search calls per
// episode; MultiHop1, MultiHop2 and MultiHop3 the shares of the multi-hop
// (2 or more hops) episodes that searched once, twice, and three times or
// more; Evidence the share of the multi-hop episodes' supporting passages
// their searches retrieved (over the tasks that name them; 0 for a store
// written before evidence was recorded); AnswerInResult the share of
// episodes whose answer one of their search results contained; NoSearch
// the share with no search.
type Behaviour struct {
	Episodes                                                                      int
	Searches, MultiHop1, MultiHop2, MultiHop3, Evidence, AnswerInResult, NoSearch float64
}

// ReadBehaviour reads the behaviour of a store's in-domain evaluation
// episodes, by method as ReadOutcomes names them (evalMethod): "Base Tool
// Call" at iteration 0 and rl at the last evaluated iteration. Naive RAG's
// episodes are left out: their search is the harness's, not the policy's.
func ReadBehaviour(storePath, rl string) (map[string]Behaviour, error) {
	_, rows, err := store.QueryReadOnly(storePath, `
WITH ep AS (
  SELECT t.iteration it, t.hops, 1.0 * t.evidence / t.support recall,
    (SELECT count(*) FROM tool_calls c WHERE c.tid = t.tid AND c.tool = 'search') ns,
    (SELECT count(*) FROM tool_calls c WHERE c.tid = t.tid AND c.tool = 'search' AND t.answer <> ''
       AND instr(lower(c.result), lower(t.answer)) > 0) hit
  FROM trajectories t
  WHERE t.split = 'eval' AND t.id NOT LIKE '%-eval-rag-%' AND t.id NOT LIKE '%-eval-ood-%'
)
SELECT it, count(*), avg(ns),
  coalesce(avg(CASE WHEN hops >= 2 THEN ns = 1 END), 0), coalesce(avg(CASE WHEN hops >= 2 THEN ns = 2 END), 0),
  coalesce(avg(CASE WHEN hops >= 2 THEN ns >= 3 END), 0), coalesce(avg(CASE WHEN hops >= 2 THEN recall END), 0),
  avg(hit > 0), avg(ns = 0)
FROM ep GROUP BY it ORDER BY it`)
	if err != nil {
		return nil, err
	}
	out := map[string]Behaviour{}
	last := 0
	if len(rows) > 0 { // rows come in iteration order
		last, _ = strconv.Atoi(fmt.Sprint(rows[len(rows)-1][0]))
	}
	for _, r := range rows {
		it, err := strconv.Atoi(fmt.Sprint(r[0]))
		if err != nil {
			return nil, fmt.Errorf("%s: iteration %v: %w", storePath, r[0], err)
		}
		method, ok := evalMethod(it, last, false, rl)
		if !ok {
			continue
		}
		var f [7]float64
		for k := range f {
			if f[k], err = strconv.ParseFloat(fmt.Sprint(r[2+k]), 64); err != nil {
				return nil, fmt.Errorf("%s: iteration %d: %v: %w", storePath, it, r[2+k], err)
			}
		}
		n, _ := strconv.Atoi(fmt.Sprint(r[1]))
		out[method] = Behaviour{Episodes: n, Searches: f[0], MultiHop1: f[1], MultiHop2: f[2], MultiHop3: f[3], Evidence: f[4],
			AnswerInResult: f[5], NoSearch: f[6]}
	}
	return out, nil
}
