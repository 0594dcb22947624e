// A search agent written against the official openai SDK, trained by
// agentrl as it is (agent.command). It answers the synthetic world's
// multi-hop questions: it asks the model, runs the model's search calls
// itself on the run's BM25 index, sends back what it found, and prints the
// model's <answer>.
//
// agentrl gives it, per episode:
//   stdin / AGENTRL_TASK   the task as JSON: {"id", "question", ...}
//   OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL   this episode on the gateway
// and the config's agent.env adds:
//   SEARCH_INDEX  the index (trainer index, or a run's index.db)
//   SEARCH_K      passages per search (as tools.search.k), default 2
//   MAX_TURNS     model calls per question, default 4
//   TRAINER       the trainer binary, used for search when sqlite3 is absent
//
// Run it by hand against `trainer serve`:
//   echo '{"id":"q1","question":"..."}' | NODE_PATH=third_party/npm/node_modules \
//     OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=none OPENAI_MODEL=NAME \
//     SEARCH_INDEX=runs/NAME/index.db node examples/agents/search_agent.cjs
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const OpenAI = require('openai').default || require('openai');

const SYSTEM = 'Answer the question. Search for the facts you need, one search per step. ' +
  'When you know the answer, reply with <answer>the answer</answer>.';
// The search tool as the model saw it in its warm start (agentrl's own
// search tool's schema, so the prompt is the one it learned).
const SEARCH = {
  type: 'function',
  function: {
    name: 'search',
    description: 'Search the passage collection by keywords (BM25); returns the best matching passages with their titles.',
    parameters: { type: 'object', properties: { query: { type: 'string', description: 'keywords or a question to search for' } },
      required: ['query'], additionalProperties: false },
  },
};
const MAX_OBSERVATION = 600; // characters of a tool response, as env.max_observation_chars

const index = process.env.SEARCH_INDEX;
const k = Number(process.env.SEARCH_K || 2);
const hasSqlite = (() => { try { execFileSync('sqlite3', ['-version']); return true; } catch { return false; } })();

// search returns the k best passages, one per line, "Doc i (Title: t) text".
function search(query) {
  const terms = [...new Set((query.toLowerCase().match(/[\p{L}\p{N}\p{M}]+/gu) || []))].slice(0, 64);
  if (terms.length === 0) return `Error: the query ${JSON.stringify(query)} has no words to search for`;
  let hits;
  if (hasSqlite) {
    const match = terms.map((t) => `"${t}"`).join(' OR ').replace(/'/g, "''");
    const out = execFileSync('sqlite3', ['-json', '-readonly', index,
      `SELECT title, text FROM passages_fts WHERE passages_fts MATCH '${match}' ORDER BY rank LIMIT ${k}`]).toString();
    hits = out.trim() ? JSON.parse(out) : [];
  } else {
    const out = execFileSync(process.env.TRAINER || 'trainer', ['search', '--index', index, '--json', '--k', String(k), query]).toString();
    hits = out.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }
  if (hits.length === 0) return 'No results.';
  const oneLine = (s) => s.split(/\s+/).filter(Boolean).join(' ');
  let text = hits.map((h, i) => `Doc ${i + 1} (Title: ${oneLine(h.title)}) ${oneLine(h.text)}`).join('\n');
  if (text.length > MAX_OBSERVATION) {
    const marker = (n) => `\n...[truncated ${n} chars]`;
    const dropped = text.length - (MAX_OBSERVATION - marker(text.length).length);
    text = text.slice(0, MAX_OBSERVATION - marker(dropped).length) + marker(dropped);
  }
  return text;
}

async function main() {
  const task = JSON.parse(fs.readFileSync(0, 'utf8').split('\n')[0]);
  const client = new OpenAI({ maxRetries: 0 });
  const messages = [{ role: 'system', content: SYSTEM }, { role: 'user', content: task.question }];
  for (let turn = 0; turn < Number(process.env.MAX_TURNS || 4); turn++) {
    let c;
    try {
      c = await client.chat.completions.create({ model: process.env.OPENAI_MODEL, messages, tools: [SEARCH] });
    } catch (e) {
      if (e.status === 400 && e.code === 'context_length_exceeded') break; // the episode's token budget is spent
      throw e;
    }
    const msg = c.choices[0].message;
    const m = /<answer>([\s\S]*?)<\/answer>/.exec(msg.content || '');
    if (m) {
      console.log(m[1].trim());
      return;
    }
    if (!msg.tool_calls || msg.tool_calls.length === 0) break; // neither a search nor an answer
    messages.push(msg);
    for (const call of msg.tool_calls) {
      let result;
      try {
        result = search(JSON.parse(call.function.arguments).query || '');
      } catch (e) {
        result = `Error: ${e.message}`;
      }
      messages.push({ role: 'tool', tool_call_id: call.id, content: result });
    }
  }
  console.log(JSON.stringify({ answer: '' })); // gave up: an empty answer scores 0
}

main().catch((e) => { console.error(e.stack || e); process.exit(1); });
