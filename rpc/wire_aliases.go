// Transitional: the names that moved to package wire, until their uses are
// renamed (the next commit). Not to stay.

package rpc

import (
	"io"

	"github.com/agyharness/agyharness/wire"
)

type Int = wire.Int
type Int64 = wire.Int64
type StepType = wire.StepType

const StepUserInput = wire.StepUserInput
const StepPlannerResponse = wire.StepPlannerResponse
const StepRunCommand = wire.StepRunCommand
const StepAskQuestion = wire.StepAskQuestion
const StepViewFile = wire.StepViewFile
const StepListDirectory = wire.StepListDirectory
const StepGeneric = wire.StepGeneric
const StepCheckpoint = wire.StepCheckpoint
const StepConversationHistory = wire.StepConversationHistory
const StepSystemMessage = wire.StepSystemMessage
const StepInvokeSubagent = wire.StepInvokeSubagent
const StepCodeAction = wire.StepCodeAction
const StepFileChange = wire.StepFileChange
const StepGrepSearch = wire.StepGrepSearch
const StepFind = wire.StepFind
const StepViewFileOutline = wire.StepViewFileOutline
const StepReadURLContent = wire.StepReadURLContent
const StepSearchWeb = wire.StepSearchWeb
const StepCommandStatus = wire.StepCommandStatus
const StepSendCommandInput = wire.StepSendCommandInput
const StepMCPTool = wire.StepMCPTool
const StepBrowserSubagent = wire.StepBrowserSubagent
const StepTaskBoundary = wire.StepTaskBoundary
const StepNotifyUser = wire.StepNotifyUser

type StepStatus = wire.StepStatus

const StatusPending = wire.StatusPending
const StatusQueued = wire.StatusQueued
const StatusRunning = wire.StatusRunning
const StatusGenerating = wire.StatusGenerating
const StatusWaiting = wire.StatusWaiting
const StatusDone = wire.StatusDone
const StatusError = wire.StatusError
const StatusCanceled = wire.StatusCanceled
const StatusCleared = wire.StatusCleared
const StatusHalted = wire.StatusHalted
const StatusInterrupted = wire.StatusInterrupted
const StatusInvalid = wire.StatusInvalid

type RunStatus = wire.RunStatus

const RunIdle = wire.RunIdle
const RunRunning = wire.RunRunning
const RunCanceling = wire.RunCanceling
const RunBusy = wire.RunBusy
const SourceUserExplicit = wire.SourceUserExplicit
const SourceModel = wire.SourceModel
const SourceSystem = wire.SourceSystem

type Step = wire.Step
type StepMetadata = wire.StepMetadata
type StepInfo = wire.StepInfo
type ToolCall = wire.ToolCall
type ModelUsage = wire.ModelUsage
type ModelRef = wire.ModelRef
type UserInput = wire.UserInput
type TextItem = wire.TextItem
type UserConfig = wire.UserConfig
type PlannerConfig = wire.PlannerConfig
type PlannerResponse = wire.PlannerResponse
type RunCommand = wire.RunCommand
type CombinedOutput = wire.CombinedOutput
type AskQuestion = wire.AskQuestion
type Question = wire.Question
type Option = wire.Option
type Interaction = wire.Interaction
type PermissionRequest = wire.PermissionRequest
type Resource = wire.Resource
type CompletedInteraction = wire.CompletedInteraction
type InteractionResponse = wire.InteractionResponse
type QuestionResponses = wire.QuestionResponses
type QuestionResponse = wire.QuestionResponse
type PermissionAnswer = wire.PermissionAnswer
type Generic = wire.Generic
type GenericResult = wire.GenericResult
type InvokeSubagent = wire.InvokeSubagent
type SubagentResult = wire.SubagentResult
type ModelInfo = wire.ModelInfo

func unmarshal(data []byte, v any) error { return wire.Unmarshal(data, v) }

func decodeStepsReusing(r io.Reader, prev []Step) ([]Step, error) {
	return wire.DecodeStepsReusing(r, prev)
}
