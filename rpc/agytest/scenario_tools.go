package agytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// EditAction is a file edit: Chunks replace old text with new in an
// existing file (agy's replace_file_content, or multi_replace_file_content
// for several chunks: a CODE_ACTION step with replacement chunks, then the
// applied diff), or, with Create, a new file holding Content (write_to_file:
// a CODE_ACTION creating the file). NeedsApproval puts a permission prompt
// {action:"write_file", target: Path} on it; a denied edit changes nothing.
type EditAction struct {
	Path          string      `json:"path"`
	Chunks        []EditChunk `json:"chunks,omitempty"`
	Create        bool        `json:"create,omitempty"`
	Content       string      `json:"content,omitempty"`
	NeedsApproval bool        `json:"needs_approval,omitempty"`
}

// EditChunk replaces Old (found at Line, 1-based, when set) with New.
type EditChunk struct {
	Old  string `json:"old"`
	New  string `json:"new"`
	Line int    `json:"line,omitempty"`
}

// SearchAction is a search: Tool grep_search (a GREP_SEARCH step: Query in
// Path, hits with a line and its text), find_by_name (FIND: files named like
// Query under Path, hits by path) or search_web (SEARCH_WEB: hits are pages,
// Path their URL and Text their title; Summary is agy's summary of them).
type SearchAction struct {
	Tool    string      `json:"tool"`
	Query   string      `json:"query"`
	Path    string      `json:"path,omitempty"`
	Hits    []SearchHit `json:"hits,omitempty"`
	Summary string      `json:"summary,omitempty"`
}

// SearchHit is one result of a search.
type SearchHit struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
	Text string `json:"text,omitempty"`
}

// FetchAction reads a web page (read_url_content: a READ_URL_CONTENT step
// whose document is Content).
type FetchAction struct {
	URL     string `json:"url"`
	Title   string `json:"title,omitempty"`
	Content string `json:"content"`
}

// MCPAction calls Tool of the MCP server Server with Arguments (a JSON
// object): an MCP_TOOL step whose result is Result.
type MCPAction struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    string          `json:"result,omitempty"`
}

// StepAction is a tool step of any type, for the types the other actions do
// not make: Type (CORTEX_STEP_TYPE_...) with Body as its type-named body
// (taskBoundary for TASK_BOUNDARY) while it runs, and Result merged into the
// body when it is DONE. Tool names the tool (metadata.toolCall.name) and
// Summary is metadata.toolSummary. Body and Result are JSON objects with
// the reference schema's field names.
type StepAction struct {
	Type    string          `json:"type"`
	Tool    string          `json:"tool"`
	Summary string          `json:"summary,omitempty"`
	Body    json.RawMessage `json:"body,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// Step returns a tool step action.
func Step(s StepAction) Action { return Action{Step: &s} }

// Edit returns an edit action.
func Edit(e EditAction) Action { return Action{Edit: &e} }

// Search returns a search action.
func Search(s SearchAction) Action { return Action{Search: &s} }

// Fetch returns a web read action.
func Fetch(f FetchAction) Action { return Action{Fetch: &f} }

// MCP returns an MCP tool call.
func MCP(m MCPAction) Action { return Action{MCP: &m} }

// searchTools are the search tools the fake knows.
var searchTools = []string{"grep_search", "find_by_name", "search_web"}

func (a Action) validateTools() error {
	switch {
	case a.RunCommand != nil:
		c := a.RunCommand
		if c.Chunks < 0 {
			return errors.New("run_command chunks must not be negative")
		}
		if c.Background && strings.Count(c.Output, "\n") < 2 {
			return errors.New("run_command background needs an output of two lines or more (one shown by run_command, the rest by command_status)")
		}
	case a.Edit != nil:
		e := a.Edit
		switch {
		case e.Path == "":
			return errors.New("edit needs a path")
		case e.Create && len(e.Chunks) > 0:
			return errors.New("edit: create takes content, not chunks")
		case !e.Create && len(e.Chunks) == 0:
			return errors.New("edit needs chunks (or create with content)")
		case !e.Create && e.Content != "":
			return errors.New("edit: content is for create")
		}
		for i, c := range e.Chunks {
			if c.Old == "" {
				return fmt.Errorf("edit chunk %d: empty old text", i+1)
			}
		}
	case a.Search != nil:
		s := a.Search
		known := false
		for _, t := range searchTools {
			known = known || s.Tool == t
		}
		if !known {
			return fmt.Errorf("search tool %q: want one of %s", s.Tool, strings.Join(searchTools, ", "))
		}
		if s.Query == "" {
			return errors.New("search needs a query")
		}
		for i, h := range s.Hits {
			if h.Path == "" {
				return fmt.Errorf("search hit %d: empty path", i+1)
			}
		}
	case a.Fetch != nil:
		if !strings.HasPrefix(a.Fetch.URL, "http://") && !strings.HasPrefix(a.Fetch.URL, "https://") {
			return fmt.Errorf("fetch url %q: want http:// or https://", a.Fetch.URL)
		}
	case a.Step != nil:
		st := a.Step
		if !strings.HasPrefix(st.Type, "CORTEX_STEP_TYPE_") || st.Tool == "" {
			return errors.New("step needs a CORTEX_STEP_TYPE_ type and a tool name")
		}
		for _, raw := range []json.RawMessage{st.Body, st.Result} {
			var obj map[string]any
			if len(raw) > 0 && json.Unmarshal(raw, &obj) != nil {
				return errors.New("step body and result must be JSON objects")
			}
		}
	case a.MCP != nil:
		m := a.MCP
		if m.Server == "" || m.Tool == "" {
			return errors.New("mcp needs a server and a tool")
		}
		if len(m.Arguments) > 0 {
			var obj map[string]any
			if json.Unmarshal(m.Arguments, &obj) != nil {
				return errors.New("mcp arguments must be a JSON object")
			}
		}
	}
	return nil
}
