// An ACP client as editors speak it, through the official TypeScript SDK:
// it starts the agent command given in AGYHARNESS_ACP_CMD (a JSON array),
// initializes, opens a session, prompts (answering a command's permission
// request with "allow once"), then prompts again and cancels while the
// agent waits for permission, and checks every update it received.
// Exit 0 when everything held, 1 with the reasons otherwise.
//
// The agent runs against agyharness's fake agy, whose scenario (set up by
// the Go test) answers "list" with thinking, text, an approved `ls -la`
// whose output grows, an edit of main.go and a summary, and "deploy" with a
// `make deploy` that needs approval.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";

const failures = [];
function check(cond, what) {
  if (!cond) failures.push(what);
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const argv = JSON.parse(process.env.AGYHARNESS_ACP_CMD ?? "null");
if (!Array.isArray(argv) || argv.length === 0) {
  console.error("AGYHARNESS_ACP_CMD must be a JSON array: the agent command line");
  process.exit(2);
}

const agent = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const agentExited = new Promise((resolve) => agent.on("exit", (code, signal) => resolve({ code, signal })));

const cwd = mkdtempSync(join(tmpdir(), "agyharness-e2e-")); // the session's workspace, removed at the end
const updates = []; // every session/update, in arrival order
let onPermission = null; // set per prompt: how to answer session/request_permission
const permissionRequests = [];

const app = acp
  .client({ name: "agyharness-e2e" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
  })
  .onRequest(acp.methods.client.session.requestPermission, async (cx) => {
    permissionRequests.push(cx.params);
    if (!onPermission) throw new Error("unexpected permission request");
    return onPermission(cx);
  });

const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

function textOf(kind, from = 0) {
  return updates
    .slice(from)
    .filter((n) => n.update.sessionUpdate === kind && n.update.content?.type === "text")
    .map((n) => n.update.content.text)
    .join("");
}

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await withTimeout(
      ctx.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: "agyharness-e2e", version: "1.0.0" },
      }),
      20000,
      "initialize",
    );
    check(init.protocolVersion === acp.PROTOCOL_VERSION, `protocol version ${init.protocolVersion}`);
    check(init.agentCapabilities?.loadSession === true, "the agent advertises session/load");

    const session = await withTimeout(
      ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }),
      30000,
      "session/new",
    );
    const sessionId = session.sessionId;
    check(typeof sessionId === "string" && sessionId.length > 0, "session/new returned a session id");
    const model = (session.configOptions ?? []).find((o) => o.id === "model");
    check(model && model.type === "select" && model.options.length > 0, "the session offers a model option");

    // Prompt 1: streamed thinking and text, a command approved once.
    onPermission = async ({ params }) => {
      const allow = params.options.find((o) => o.kind === "allow_once");
      check(allow, "the permission request offers allow_once");
      check(!params.options.some((o) => o.kind === "allow_always"), "no allow_always (agy cannot persist grants)");
      check(params.toolCall?.title === "ls -la", `permission title ${params.toolCall?.title}`);
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    };
    const first = await withTimeout(
      ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "list the files" }] }),
      30000,
      "first session/prompt",
    );
    check(first.stopReason === "end_turn", `first prompt stop reason ${first.stopReason}`);
    check(permissionRequests.length === 1, `permission requests after the first prompt: ${permissionRequests.length}`);
    check(updates.every((n) => n.sessionId === sessionId), "every update names the session");
    check(textOf("agent_thought_chunk").includes("look before answering"), "thinking streamed as agent_thought_chunk");
    const said = textOf("agent_message_chunk");
    check(said.includes("Let me look at the workspace first."), `text before the command: ${JSON.stringify(said)}`);
    check(said.includes("The workspace holds main.go."), `text after the command: ${JSON.stringify(said)}`);
    const call = updates.find((n) => n.update.sessionUpdate === "tool_call");
    check(call && call.update.title === "ls -la" && call.update.kind === "execute", `tool_call ${JSON.stringify(call?.update)}`);
    const done = updates.find(
      (n) => n.update.sessionUpdate === "tool_call_update" && n.update.toolCallId === call?.update.toolCallId && n.update.status === "completed",
    );
    check(done, "the command's tool_call_update completed");
    const output = (done?.update.content ?? []).map((c) => c.content?.text ?? "").join("");
    check(output.includes("main.go"), `the command's output: ${JSON.stringify(output)}`);
    // The command's output streamed into its tool call as it grew.
    const live = updates
      .filter((n) => n.update.sessionUpdate === "tool_call_update" && n.update.toolCallId === call?.update.toolCallId && n.update.status === "in_progress")
      .map((n) => (n.update.content ?? []).map((c) => c.content?.text ?? "").join(""));
    check(live.length >= 2, `live output updates: ${JSON.stringify(live)}`);
    check(live.every((text, i) => i === 0 || text.startsWith(live[i - 1])), `live output only grows: ${JSON.stringify(live)}`);
    check(live.length > 0 && live[0].length < output.length, `the first live output is partial: ${JSON.stringify(live[0])}`);
    // An edit is a tool call of kind edit with diff content.
    const edit = updates.find((n) => n.update.sessionUpdate === "tool_call" && n.update.kind === "edit");
    check(edit && edit.update.title === "Edit /workspace/main.go", `edit tool_call ${JSON.stringify(edit?.update)}`);
    const diff = (edit?.update.content ?? []).find((c) => c.type === "diff");
    check(
      diff && diff.path === "/workspace/main.go" && diff.oldText === "func main() {}\n" && diff.newText.includes("println"),
      `the edit's diff content: ${JSON.stringify(diff)}`,
    );
    check(edit?.update.locations?.[0]?.path === "/workspace/main.go" && edit?.update.locations?.[0]?.line === 3, `edit locations ${JSON.stringify(edit?.update.locations)}`);
    const editDone = updates.find(
      (n) => n.update.sessionUpdate === "tool_call_update" && n.update.toolCallId === edit?.update.toolCallId && n.update.status === "completed",
    );
    check((editDone?.update.content ?? []).some((c) => c.type === "diff"), `the edit completed with its diff: ${JSON.stringify(editDone?.update)}`);
    check(updates.some((n) => n.update.sessionUpdate === "usage_update" && n.update.used > 0), "usage_update reported");

    // Prompt 2: cancelled while the agent waits for permission.
    const mark = updates.length;
    let cancelledAt = 0;
    onPermission = async ({ params, agent }) => {
      check(params.toolCall?.title === "make deploy", `second permission title ${params.toolCall?.title}`);
      cancelledAt = Date.now();
      await agent.notify(acp.methods.agent.session.cancel, { sessionId });
      // ACP: the client answers its pending permission requests "cancelled".
      return { outcome: { outcome: "cancelled" } };
    };
    const second = await withTimeout(
      ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "deploy it" }] }),
      30000,
      "second session/prompt (cancelled)",
    );
    check(second.stopReason === "cancelled", `second prompt stop reason ${second.stopReason}`);
    check(cancelledAt > 0 && Date.now() - cancelledAt < 15000, "the cancelled prompt returned within the deadline");
    check(!textOf("agent_message_chunk", mark).includes("Deployed."), "nothing after the cancel was said");
  });
} catch (err) {
  failures.push(`error: ${err?.stack ?? err}`);
}

agent.stdin.end();
const exit = await withTimeout(agentExited, 15000, "agent exit after stdin closed").catch((err) => {
  agent.kill("SIGKILL");
  failures.push(String(err));
  return null;
});
if (exit) check(exit.code === 0, `agent exit code ${exit.code} (signal ${exit.signal})`);
rmSync(cwd, { recursive: true, force: true });

if (failures.length > 0) {
  console.error("ACP end-to-end test failed:\n- " + failures.join("\n- "));
  console.error("updates received:\n" + updates.map((u) => JSON.stringify(u.update)).join("\n"));
  process.exit(1);
}
console.log(`ok: ${updates.length} updates, ${permissionRequests.length} permission requests`);
