// Package agytest is a fake of agy's language server, the way net/http/httptest
// fakes an HTTP server: every test, demo and benchmark of the project runs
// against it, so it copies agy's behaviour, quirks included
// (docs/ARCHITECTURE.md, "What the harness relies on from agy"; docs/REAL-AGY.md).
//
// A Server listens on HTTPS (self-signed, HTTP/2) on a random loopback port
// and on plain HTTP next to it, and serves the Connect protocol of
// exa.language_server_pb.LanguageServerService as connect-go writes it. Turns
// arrive over SendUserCascadeMessage or TypeTurn (a person typing in agy's own
// terminal) and run a Scenario: streamed thinking and text, commands and file
// tools with or without a permission prompt, questions, subagents, failures.
//
// Behaviour worth knowing, each as agy does it (Options turns some off):
//   - A fresh server has no conversation: the first turn typed (TypeTurn)
//     mints the one agy's terminal shows (Options.Conversation starts with
//     one). GetAllCascadeTrajectories lists only conversations of earlier
//     runs before that (Options.EarlierRuns), as agy lists those it keeps on
//     disk. A conversation made with StartCascade (which needs a source) is
//     never the terminal's.
//   - The cancel methods answer 200 and change nothing while a prompt is
//     WAITING: the prompt must be declined first ({"permission":{}} or
//     {"askQuestion":{"responses":[]}}), then the turn cancels. A declined
//     question ends DONE with the empty answer echoed, and the turn goes on.
//   - The run status stays RUNNING while a prompt is parked, and a parked
//     prompt may never be streamed (Options.UnstreamedPrompts): only
//     GetCascadeTrajectorySteps shows it WAITING.
//   - GetCascadeTrajectorySteps answers from stepOffset, at most
//     Options.MaxStepsPerRead steps (600 by default): a long trajectory is
//     only ever seen in windows.
//   - Steps are proto3 JSON shaped like testdata/agy-steps: defaults
//     omitted, 64-bit integers as strings, stepIndex inside
//     metadata.sourceTrajectoryStepInfo. Streamed copies drop
//     metadata.toolCall and plannerResponse.toolCalls, and some streamed DONE
//     planner copies carry modifiedResponse without response.
//   - A stream sends a snapshot, then sparse index-addressed frames of
//     cumulative step copies. Some turns (Options.IdleBeforeFlush) report IDLE
//     before the last step's final copy, which then comes in a later frame or
//     only through GetCascadeTrajectorySteps. A repeated subscriberId ends the
//     older stream. After Clear, a stream of the old active conversation
//     follows the new one: its frames name the new conversationId.
//   - A WAITING prompt expires after Options.PromptTimeout into ERROR and comes
//     back as a new WAITING step at a higher index. Answers must carry the
//     trajectoryId and stepIndex inside the interaction and target the step
//     WAITING now, else 500 "input not registered for step N".
//   - A denied permission ends the step DONE with the echoed answer in
//     completedInteractions and no output or exit code; the turn goes on.
//   - SendUserCascadeMessage without a model fails with "neither PlanModel nor
//     RequestedModel specified" and records nothing (agy's turn would end in
//     ERROR; failing the call tells the caller at once).
//   - SendAgentMessage records a SYSTEM_MESSAGE, never a user turn.
//   - A message sent while a turn runs is queued behind it. Cancel methods
//     stop a turn that is not parked on a prompt (live steps turn CANCELED)
//     and return once the cascade is IDLE; Options.CancelNoop makes some of
//     them ineffective, as on some builds.
//   - Subagent children are conversations of their own: their summaries carry
//     trajectoryMetadata.parentConversationId and the root's
//     rootConversationId (GetConversationMetadata echoes that root too); their
//     first step is a USER_INPUT with the task, sourced SYSTEM. As agy 1.1.9
//     does, their trajectoryType is CASCADE like a root's, and the parent's
//     INVOKE_SUBAGENT lists them (subagents[]{role, typeName}, results[]) and
//     is DONE at spawn while they run on (Options.LegacySubagents: the older
//     shape).
//   - Scenarios can ask for agy's provider errors (Action.ProviderError: one
//     ERROR_MESSAGE step per attempt, the last final) and background tasks
//     (Action.Task) whose notification wakes agy after the turn: a
//     SYSTEM_MESSAGE step and an answer with no user turn
//     (Options.NoBackgroundWakes turns it off). The default scenario has
//     neither.
//   - Rewind (and RevertToCascadeStep) cuts a conversation back to a step: the
//     next steps take the freed indices (Options.RewindMarksCleared: the
//     rewound steps stay, CLEARED).
//   - A command that ran carries exitCode even when 0 (as recorded); a denied
//     one carries none.
//
// Options.HistorySteps starts the conversation with a long history of
// finished turns, made from their index when sent (a million steps cost the
// fake 8 MB); a stream's first frame carries them all, as agy's does, far
// over a reader's frame limit for a million.
//
// GroundTruth records every committed step so tests compare what a client saw
// with what happened; InjectFault arms seeded, reproducible faults.
package agytest
