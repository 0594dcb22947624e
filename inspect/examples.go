package inspect

// example is one of the example queries of docs/store.md, a click away in
// the SQL box.
type example struct{ Title, SQL string }

// examples are docs/store.md's example queries, in its order
// (TestExamplesMatchDocs keeps them equal).
var examples = []example{
	{"Which tools fail most?", `SELECT tool, calls, failures, ROUND(success_rate, 3) AS success_rate
FROM tool_success
ORDER BY failures DESC, success_rate`},
	{"How does answer accuracy move with the number of turns?", `SELECT n_turns, COUNT(*) AS n, SUM(correct) AS correct, ROUND(AVG(correct), 3) AS accuracy
FROM trajectories
GROUP BY n_turns
ORDER BY n_turns`},
	{"Reward and accuracy by iteration, train against eval:", `SELECT iteration, split, n, ROUND(reward_mean, 3) AS reward, ROUND(accuracy, 3) AS accuracy
FROM reward_by_iteration
ORDER BY iteration, split`},
	{"Which evaluation answers changed, and did they get better?", `SELECT task_id, from_iteration, to_iteration, old_answer, new_answer, now_correct
FROM answer_changes
ORDER BY task_id, to_iteration`},
	{"How often are training episodes cut off by the turn or token limit?", `SELECT iteration, COUNT(*) AS n, SUM(truncated) AS truncated, ROUND(AVG(truncated), 3) AS rate
FROM trajectories
WHERE split = 'train'
GROUP BY iteration
ORDER BY iteration`},
	{"Accuracy by number of hops, over all iterations:", `SELECT hops, split, SUM(n) AS n, ROUND(SUM(accuracy * n) / SUM(n), 3) AS accuracy
FROM accuracy_by_hops
GROUP BY hops, split
ORDER BY hops, split`},
	{"Which turns called several tools at once, and how did each call go?", `SELECT id, turn, call, tool, ok
FROM tool_calls JOIN trajectories USING (tid)
WHERE (tid, turn) IN (SELECT tid, turn FROM tool_calls GROUP BY tid, turn HAVING COUNT(*) > 1)
ORDER BY id, turn, call`},
}
