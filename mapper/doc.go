// Package mapper turns agy's trajectory steps into the conversation events of
// the public contract (messages.Event; docs/ARCHITECTURE.md, "The event contract").
//
// It is pure: no I/O, no goroutines, no clock reads (every observation carries
// its time). A session owns one Reconciler per conversation (its root, and one
// per subagent child) and feeds it every Observation it gets, from the stream
// (FromFrame) and from the poller (FromSnapshot), in any mix and with any
// repetition. Apply returns the events those steps imply, each exactly once.
//
// # Step identity
//
// A step is identified by its index in the trajectory: its position in a
// snapshot, or indices[i] in a stream frame. metadata.sourceTrajectoryStepInfo.stepIndex
// is not used, because proto3 omits it when it is 0 and USER_INPUT steps lack
// it. A slot whose step type changes is treated as a new step.
//
// # Staleness
//
// Every observation may be stale (a poll read before a frame that arrives
// first, a replay after a reader restart). The reconciler only moves forward:
// once a step is terminal, live copies of it are ignored; a text that is a
// prefix of (or shorter than) what was already emitted is ignored while the
// step is live; a text that diverges and is not shorter is reported as a
// snapshot, never as a wrong delta. At the terminal copy the emitted text is
// always brought to the committed text (one last delta, or a snapshot) before
// the message, so deltas concatenated from the last snapshot always equal the
// committed text. A PLANNER_RESPONSE that ends without DONE (interrupted)
// commits the text it had, so a consumer's live preview is retired; one that
// ends without any text (tool calls only) commits no message, only usage.
// Unchanged steps are skipped by comparing a hash of their raw
// bytes, so a frame costs what its changed steps cost, whatever the length of
// the trajectory.
//
// # Memory
//
// A reconciler's memory is bounded whatever agy sends (but for subagent
// children its caller does not forget: below). It keeps whole (a
// slot: what it emitted for a step, the base of its next delta) the steps
// of the last Config.Window indices (DefaultWindow), and older ones that
// can still change: live, or asking an open prompt. A finished step older
// than that is dropped; what stays is a fingerprint, hashes of its type
// and its createdAt in 8 bytes, for up to Config.Fingerprints indices
// (DefaultFingerprints: 8 MiB); past that the oldest are sealed. A later
// copy of a dropped step of the same type, or of a sealed one, implies
// nothing: it was delivered (an INVOKE_SUBAGENT copy still names its
// children). A copy of another type is a new step, as with a kept slot;
// one with another createdAt is a rewind to it, as with a kept slot; a
// rewind forgets the fingerprints after it. A slot keeps the raw bytes of
// the steps a read brings again (from the first live step on, and the last
// one: known unchanged without hashing), none of the finished steps before,
// and no text of a finished reply.
// Steps left live far behind the
// end are dropped once they outnumber the window twice (a later copy of one
// implies nothing either). Closed prompts are let go of; command lines
// (for COMMAND_STATUS titles) and unknown step types reported are bounded
// too. The children of INVOKE_SUBAGENT steps are kept whole until their
// caller has mirrored each to its end and forgets it (ForgetChild, as the
// session does): a 64-bit hash of its id stays (about 30 bytes with its
// set, BenchmarkChildMemory), for up to Config.Fingerprints children.
// Footprint counts what is held.
//
// # Event ids
//
// Ids are deterministic: the same steps give the same ids in every run, so
// consumers can dedup. With c the conversation id and i the step index:
//
//	c/i/user                 user_message of a USER_INPUT step
//	c/i/model                model_changed on that turn
//	c/i/reasoning@k          reasoning_delta at byte offset k of the thinking
//	c/i/reasoning#n          the n-th reasoning snapshot (a rewrite); later
//	                         deltas are c/i/reasoning#n@k
//	c/i/text@k, c/i/text#n   output_text_delta, likewise (c/i/text#n@k after
//	                         the n-th snapshot)
//	c/i/message              message (also the item_id of the text deltas;
//	                         c/i/reasoning is the item_id of reasoning deltas)
//	c/i/usage                usage of that PLANNER_RESPONSE
//	c/i/call, c/i/output     function_call and function_call_output (also the
//	                         item_id of the output deltas)
//	c/i/output@k, c/i/output#n
//	                         function_call_output_delta at byte offset k of a
//	                         tool's live output, and its n-th snapshot
//	c/prompt/i               elicitation id of a prompt first seen at step i
//	                         (kept across timeout-retries); its events are
//	                         c/prompt/i/request and c/prompt/i/resolved
//	c/prompt/i.n             the n-th ask (n >= 2) of the same step i: agy
//	                         asks again on a step (each segment of `a && b`);
//	                         events c/prompt/i.n/request, c/prompt/i.n/resolved
//	c/unknown/T              unknown_step for step type T
//	c/status/a/S             status S caused at anchor a: the step index of the
//	                         user turn or prompt, else the number of steps
//	                         known; a repeat of the same id gets .2, .3, ...
//	c/i/error                error of an ERROR_MESSAGE step (with a code), or of
//	                         a failed planner step
//	c/rewind/k               conversation_rewound of the k-th rewind
//
// After the k-th rewind (see Rewinds), the items of the steps seen from then
// on carry /rk after the conversation id (c/rk/i/user, c/rk/prompt/i, and
// c/rk/i/text@n for their deltas); a call id derived from the step index
// gets :rk: before the index. A step asked again after the k-th rewind gives
// c/rk/prompt/i.n: the epoch from the rewind, the count from the re-ask
// (which starts again on the new step at i). Items before any rewind keep
// the ids above.
//
// # Rewinds
//
// agy's /rewind cuts the trajectory back to a step; new steps take the freed
// indices, or (a shape the schema allows) the rewound steps stay CLEARED and
// new ones follow. A rewind to index i is seen when the step at a known index
// i is another step (a different metadata.createdAt), when a step turns
// CLEARED (at the first one), or when two snapshots in a row carry a Length
// (the summary's step count, read around them) shorter than the steps known.
// The reconciler then forgets the steps from i on (their createdAt retired:
// a stale copy of one is ignored), withdraws their open prompts, every ask
// of a step asked again included (expired), and reports
// conversation_rewound.
//
// # Status edges
//
// running: on a user turn (unless a prompt is still open), on a cascade
// RUNNING (or BUSY) after idle or at the start, and when the last open prompt
// closes while the cascade runs. A run status carries no version, so a stale
// RUNNING read after idle reports running until the next read says IDLE.
// waiting: when a prompt opens. idle: when agy reported the cascade IDLE and
// the steps were read after that report, that is a Snapshot carrying IDLE
// (the poller reads the status, the steps, and the status again, and passes
// IDLE only when both reads say so), no prompt is waiting and no step known
// is still live. A Frame's IDLE never closes the turn (agy can send it before
// its last steps are flushed; the session then reads a snapshot), nor does a
// Snapshot without a status (it may have been read before the IDLE). A state
// is never reported twice in a row.
//
// # Prompts
//
// A WAITING step with a requestedInteraction is a prompt. Its logical key
// (PromptKey: kind and content) survives agy's timeout-retry, which turns the
// WAITING step ERROR and asks again at a higher index: while a prompt with the
// same key is open, a new WAITING step with that key is the same prompt (its
// StepIndex moves to the freshest step; no second elicitation_request). agy
// asks one thing at a time, so an open prompt with the same key is the same
// prompt even before its ERROR copy has been seen.
//
// A prompt closes with elicitation_resolved:
//   - by harness: MarkResolved, called by the session after delivering;
//   - by terminal: its freshest step went DONE (or RUNNING with a
//     completedInteractions echo) without MarkResolved; the action comes from
//     the echoed response (permission allow -> accept, else decline);
//   - by expired (action cancel): its step went CANCELED (or another terminal
//     state but DONE and ERROR); or, after its step went ERROR (kept open,
//     expecting a retry), the turn ended (idle), a later USER_INPUT appeared, or
//     a later tool step ended without asking the same thing.
//
// A pre-answer RUNNING copy of a prompt step (stale) does not close it.
//
// agy (1.1.7 on) may ask again on the same step: a compound command's step
// stays WAITING and asks for each segment in turn. An ask is told by its
// signature: the bytes of the step's requestedInteraction and how many of
// its decisions agy shows answered (completedInteractions,
// permissions.permissionGrants). A WAITING copy whose signature was never
// seen on the slot, with no fewer answered decisions than the slot's last
// ask, is a new ask: the previous ask closes (by harness when our answer
// was in flight, else by terminal) and a new prompt opens with the id
// c/prompt/i.n. A repeated or older copy asks nothing. Superseded tells the
// session not to close agy's dialog for the answered ask (agy shows the new
// one there).
//
// Interactions beyond a permission or a question are prompts too:
// filePermission (kind permission, resource read_file or write_file on its
// path; its choices are allow once and deny only, CloseKeys 1 or 3 then
// Enter in agy's three-row file-access dialog), elicitation (an MCP server's: kind elicitation), any other key
// (kind other: agy's name for it, its text, its raw request; not
// answerable, withdrawn when its step leaves WAITING).
package mapper
