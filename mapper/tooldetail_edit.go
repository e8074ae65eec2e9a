package mapper

import (
	"strings"

	"github.com/agyharness/agyharness/messages"
	"github.com/agyharness/agyharness/wire"
)

// The detail of edits: the file, the diffs proposed (the call's) and the
// diff applied (the result's, from agy's unified lines).

type pathScope struct {
	AbsolutePath string `json:"absolutePathMigrateMeToUri"`
	AbsoluteURI  string `json:"absoluteUri"`
}

func (p *pathScope) path() string {
	if p == nil {
		return ""
	}
	return filePath(firstNonEmpty(p.AbsoluteURI, p.AbsolutePath))
}

type replacementChunk struct {
	TargetContent      string   `json:"targetContent"`
	ReplacementContent string   `json:"replacementContent"`
	StartLine          wire.Int `json:"startLine"`
}

type diffBlock struct {
	StartLine   wire.Int `json:"startLine"`
	UnifiedDiff struct {
		Lines []struct {
			Text string `json:"text"`
			Type string `json:"type"`
		} `json:"lines"`
	} `json:"unifiedDiff"`
}

// fileDiff reads agy's diff lines as texts and unified lines. A block
// whose lines are all insertions is a new file when created says so.
func (b *diffBlock) fileDiff(path string, created bool) (messages.FileDiff, bool) {
	if b == nil || len(b.UnifiedDiff.Lines) == 0 {
		return messages.FileDiff{}, false
	}
	var old, nw, uni strings.Builder
	for _, l := range b.UnifiedDiff.Lines {
		text := strings.TrimSuffix(l.Text, "\n")
		switch l.Type {
		case "UNIFIED_DIFF_LINE_TYPE_INSERT":
			nw.WriteString(text + "\n")
			uni.WriteString("+" + text + "\n")
		case "UNIFIED_DIFF_LINE_TYPE_DELETE":
			old.WriteString(text + "\n")
			uni.WriteString("-" + text + "\n")
		default:
			old.WriteString(text + "\n")
			nw.WriteString(text + "\n")
			uni.WriteString(" " + text + "\n")
		}
	}
	d := messages.FileDiff{Path: path, NewText: nw.String(), Line: int(b.StartLine), Unified: uni.String()}
	if !created || old.Len() > 0 {
		d.OldText = messages.Ptr(old.String())
	}
	return d, true
}

// applied is the diff agy applied, as the result's diffs (none without one).
func (b *diffBlock) applied(path string, created bool) []messages.FileDiff {
	if fd, ok := b.fileDiff(path, created); ok {
		return []messages.FileDiff{fd}
	}
	return nil
}

func chunkDiffs(path string, chunks []replacementChunk) []messages.FileDiff {
	var out []messages.FileDiff
	for _, c := range chunks {
		out = append(out, messages.FileDiff{
			Path: path, OldText: messages.Ptr(c.TargetContent), NewText: c.ReplacementContent, Line: int(c.StartLine),
		})
	}
	return out
}

// locateEdit is the edited file, at the first diff's line.
func locateEdit(path string, diffs []messages.FileDiff) []messages.Location {
	line := 0
	if len(diffs) > 0 {
		line = diffs[0].Line
	}
	return locate(path, line)
}

// diffStat is " (+a -r)", counted from agy's unified lines, or "".
func diffStat(diffs []messages.FileDiff) string {
	add, del := 0, 0
	for _, fd := range diffs {
		for _, l := range strings.Split(fd.Unified, "\n") {
			switch {
			case strings.HasPrefix(l, "+"):
				add++
			case strings.HasPrefix(l, "-"):
				del++
			}
		}
	}
	if add == 0 && del == 0 {
		return ""
	}
	return " (+" + num(add) + " -" + num(del) + ")"
}

type codeActionBody struct {
	ActionSpec struct {
		Command *struct {
			ReplacementChunks []replacementChunk `json:"replacementChunks"`
			File              *pathScope         `json:"file"`
			LineRange         *struct {
				AbsoluteURI string   `json:"absoluteUri"`
				StartLine   wire.Int `json:"startLine"`
			} `json:"lineRange"`
			ContentTarget *struct {
				AbsoluteURI string `json:"absoluteUri"`
			} `json:"contentTarget"`
		} `json:"command"`
		CreateFile *struct {
			Path *pathScope `json:"path"`
		} `json:"createFile"`
		DeleteFile *struct {
			Path *pathScope `json:"path"`
		} `json:"deleteFile"`
	} `json:"actionSpec"`
	ActionResult struct {
		Edit *struct {
			AbsolutePath string     `json:"absolutePathMigrateMeToUri"`
			AbsoluteURI  string     `json:"absoluteUri"`
			Diff         *diffBlock `json:"diff"`
			CreateFile   bool       `json:"createFile"`
		} `json:"edit"`
	} `json:"actionResult"`
	Description string `json:"description"`
}

// path is the file the action is about, from its spec, else its result.
func (b *codeActionBody) path() string {
	spec := &b.ActionSpec
	switch {
	case spec.Command != nil:
		c := spec.Command
		switch {
		case c.File != nil:
			return c.File.path()
		case c.LineRange != nil:
			return filePath(c.LineRange.AbsoluteURI)
		case c.ContentTarget != nil:
			return filePath(c.ContentTarget.AbsoluteURI)
		}
	case spec.CreateFile != nil:
		return spec.CreateFile.Path.path()
	case spec.DeleteFile != nil:
		return spec.DeleteFile.Path.path()
	}
	if e := b.ActionResult.Edit; e != nil {
		return filePath(firstNonEmpty(e.AbsoluteURI, e.AbsolutePath))
	}
	return ""
}

func (b *codeActionBody) creates() bool {
	return b.ActionSpec.CreateFile != nil || (b.ActionResult.Edit != nil && b.ActionResult.Edit.CreateFile)
}

// editArgs are the arguments of agy's edit tools (replace_file_content,
// multi_replace_file_content, write_to_file), in polled copies only.
type editArgs struct {
	TargetFile         string
	CodeContent        string
	TargetContent      string
	ReplacementContent string
	StartLine          int
	ReplacementChunks  []struct {
		TargetContent      string
		ReplacementContent string
		StartLine          int
	}
}

// codeActionCall reads the edit from the body and the arguments: which tool
// it is (a deletion, a new file, one or several replacements) and the diffs
// it proposes.
func codeActionCall(v stepView, d *callDetail) {
	b, _ := decodeBody[codeActionBody](v)
	var args editArgs
	v.toolArgs(&args)
	path := firstNonEmpty(b.path(), args.TargetFile)
	if path == "" {
		return
	}
	switch {
	case b.ActionSpec.DeleteFile != nil:
		d.name, d.kind, d.title = "delete_file", messages.ToolDelete, "Delete "+path
	case b.creates():
		d.name, d.title = "write_to_file", "Create "+path
		if args.CodeContent != "" {
			d.diffs = []messages.FileDiff{{Path: path, NewText: args.CodeContent}}
		}
	default:
		d.title = "Edit " + path
		if c := b.ActionSpec.Command; c != nil && len(c.ReplacementChunks) > 0 {
			d.diffs = chunkDiffs(path, c.ReplacementChunks)
			if len(c.ReplacementChunks) > 1 {
				d.name = "multi_replace_file_content"
			}
		} else if len(args.ReplacementChunks) > 0 {
			for _, c := range args.ReplacementChunks {
				d.diffs = append(d.diffs, messages.FileDiff{Path: path, OldText: messages.Ptr(c.TargetContent), NewText: c.ReplacementContent, Line: c.StartLine})
			}
			d.name = "multi_replace_file_content"
		} else if args.TargetContent != "" || args.ReplacementContent != "" {
			d.diffs = []messages.FileDiff{{Path: path, OldText: messages.Ptr(args.TargetContent), NewText: args.ReplacementContent, Line: args.StartLine}}
		}
	}
	d.locations = locateEdit(path, d.diffs)
}

var codeActionResult = fromBody(func(b *codeActionBody, d *resultDetail) {
	path := b.path()
	if e := b.ActionResult.Edit; e != nil {
		d.diffs = e.Diff.applied(path, b.creates())
	}
	switch {
	case b.ActionSpec.DeleteFile != nil:
		d.say("deleted " + path)
	case b.creates():
		d.say("created " + path + diffStat(d.diffs))
	default:
		d.say("edited " + path + diffStat(d.diffs))
	}
})

type fileChangeBody struct {
	AbsolutePathURI   string             `json:"absolutePathUri"`
	FileChangeType    string             `json:"fileChangeType"`
	ReplacementChunks []replacementChunk `json:"replacementChunks"`
	Diff              *diffBlock         `json:"diff"`
}

func (b *fileChangeBody) creates() bool { return b.FileChangeType == "FILE_CHANGE_TYPE_CREATE" }

var fileChangeCall = fromBody(func(b *fileChangeBody, d *callDetail) {
	path := filePath(b.AbsolutePathURI)
	switch b.FileChangeType {
	case "FILE_CHANGE_TYPE_CREATE":
		d.title = "Create " + path
	case "FILE_CHANGE_TYPE_DELETE":
		d.kind, d.title = messages.ToolDelete, "Delete "+path
	default:
		d.title = "Edit " + path
	}
	d.diffs = chunkDiffs(path, b.ReplacementChunks)
	if len(d.diffs) == 0 {
		d.diffs = b.Diff.applied(path, b.creates())
	}
	d.locations = locateEdit(path, d.diffs)
})

var fileChangeResult = fromBody(func(b *fileChangeBody, d *resultDetail) {
	path := filePath(b.AbsolutePathURI)
	d.diffs = b.Diff.applied(path, b.creates())
	verb := map[string]string{"FILE_CHANGE_TYPE_CREATE": "created ", "FILE_CHANGE_TYPE_DELETE": "deleted "}[b.FileChangeType]
	if verb == "" {
		verb = "edited "
	}
	d.say(verb + path + diffStat(d.diffs))
})

type writeToFileBody struct {
	TargetFileURI string     `json:"targetFileUri"`
	CodeContent   []string   `json:"codeContent"`
	Diff          *diffBlock `json:"diff"`
	FileCreated   bool       `json:"fileCreated"`
}

var writeToFileCall = fromBody(func(b *writeToFileBody, d *callDetail) {
	path := filePath(b.TargetFileURI)
	d.title = "Write " + path
	if len(b.CodeContent) > 0 {
		d.diffs = []messages.FileDiff{{Path: path, NewText: strings.Join(b.CodeContent, "")}}
	}
	d.locations = locate(path, 0)
})

var writeToFileResult = fromBody(func(b *writeToFileBody, d *resultDetail) {
	path := filePath(b.TargetFileURI)
	d.diffs = b.Diff.applied(path, b.FileCreated)
	verb := "wrote "
	if b.FileCreated {
		verb = "created "
	}
	d.say(verb + path + diffStat(d.diffs))
})

type moveBody struct {
	Src string `json:"srcAbsolutePathUri"`
	Dst string `json:"dstAbsolutePathUri"`
}

var moveCall = fromBody(func(b *moveBody, d *callDetail) {
	src, dst := filePath(b.Src), filePath(b.Dst)
	d.title = "Move " + src + " → " + dst
	d.locations = append(locate(src, 0), locate(dst, 0)...)
})

var deleteDirectoryCall = fromBody(func(b *directoryBody, d *callDetail) {
	path := filePath(b.DirectoryPathURI)
	d.title = "Delete " + path
	d.locations = locate(path, 0)
})

type writeBlobBody struct {
	TargetPath   string     `json:"targetPath"`
	BytesWritten wire.Int64 `json:"bytesWritten"`
	ErrorMessage string     `json:"errorMessage"`
}

var writeBlobCall = fromBody(func(b *writeBlobBody, d *callDetail) {
	d.title = "Write " + b.TargetPath
	d.locations = locate(filePath(b.TargetPath), 0)
})

var writeBlobResult = fromBody(func(b *writeBlobBody, d *resultDetail) {
	if b.ErrorMessage != "" {
		d.say(b.ErrorMessage)
		return
	}
	d.say("wrote " + plural(int(b.BytesWritten), "byte", "bytes") + " to " + b.TargetPath)
})
