// Package acp makes agy an Agent Client Protocol agent: `agyharness acp`
// speaks ACP (JSON-RPC 2.0 over stdin/stdout, through
// github.com/coder/acp-go-sdk) to an editor such as Zed, and drives agy
// through the harness (actors.Host and actors.Session).
//
// The mapping, in brief:
//   - session/new launches agy in a tmux session the harness owns, in the
//     requested cwd (or attaches to --attach-port / --attach-pid), and binds
//     its conversation: the ACP session id is that conversation id.
//   - session/load binds an existing conversation and replays its history
//     as session/update notifications before it answers.
//   - session/prompt sends a turn and streams reasoning (agent_thought_chunk),
//     text (agent_message_chunk), tool calls (tool_call, tool_call_update)
//     and usage (usage_update) until agy is idle again; the stop reason is
//     end_turn, or cancelled after session/cancel; a failed turn is a
//     JSON-RPC error.
//   - agy's permission prompts become session/request_permission (allow once
//     or reject once: agy's RPC has no persistent grant); its questions
//     become an elicitation where the client supports forms, else a
//     permission request whose options are the question's options (single
//     select), else a declined prompt with a note to the user.
//   - agy's model catalog is the session's "model" config option; a model
//     change made in agy's own terminal is reported as config_option_update.
//
// Logs go to stderr; stdout carries the protocol only.
package acp
