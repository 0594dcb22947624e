// Package hubcache finds a model named by its Hugging Face id in the local
// Hugging Face cache, offline, as transformers does with HF_HUB_OFFLINE=1:
// "Qwen/Qwen3.5-0.8B" (or "Qwen/Qwen3.5-0.8B@REVISION") is the snapshot
// folder that `hf download Qwen/Qwen3.5-0.8B` wrote. A path that exists
// stays that path.
//
// The cache's layout is huggingface_hub's (file_download.py):
//
//	<cache>/models--Qwen--Qwen3.5-0.8B/refs/main          the commit hash main names
//	<cache>/models--Qwen--Qwen3.5-0.8B/snapshots/<hash>/  the files, links into blobs/
//
// and <cache> is huggingface_hub's constants.HF_HUB_CACHE: $HF_HUB_CACHE,
// else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
package hubcache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// DefaultRevision is the revision an id without "@REVISION" names.
const DefaultRevision = "main"

// repoID is huggingface_hub's REPO_ID_REGEX (utils/_validators.py): an
// optional namespace and a name, each of ASCII letters, digits, "_", "-"
// and ".", starting and ending with a letter, digit or "_".
var repoID = regexp.MustCompile(`^(\b[\w\-.]{1,96}\b/)?\b[\w\-.]{1,96}\b$`)

// commitHash is huggingface_hub's REGEX_COMMIT_HASH: a revision of this
// form names its snapshot folder directly; any other is a ref.
var commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Resolve returns the folder that path names: path itself when it exists;
// else, when path is a Hugging Face model id ("namespace/name" or "name",
// optionally followed by "@REVISION", a commit hash or a ref such as a
// branch or tag), that revision's snapshot folder in the cache. A path
// that neither exists nor is an id is returned as it is, for its reader
// to report. An id that is not in the cache is an error saying where it
// looked.
func Resolve(path string) (string, error) {
	if path == "" {
		return path, nil
	}
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return path, nil
	}
	id, rev, hasRev := strings.Cut(path, "@")
	if !IsRepoID(id) {
		return path, nil
	}
	if !hasRev {
		rev = DefaultRevision
	}
	if !validRevision(rev) {
		return "", fmt.Errorf("model %q: revision %q is not a commit hash or a ref name", path, rev)
	}
	cache, from := CacheDir()
	repo := filepath.Join(cache, RepoFolder(id))
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	looked := fmt.Sprintf("looked for the folder %s, then in the Hugging Face cache %s (%s)", abs, cache, from)
	fetch := "download it with `hf download " + id
	if hasRev {
		fetch += " --revision " + rev
	}
	fetch += "` (the cache is read offline, as transformers does with HF_HUB_OFFLINE=1)"
	hash := rev
	if !commitHash.MatchString(rev) {
		ref := filepath.Join(repo, "refs", filepath.FromSlash(rev))
		b, err := os.ReadFile(ref)
		if err != nil {
			return "", fmt.Errorf("model %q is neither a folder nor in the Hugging Face cache: %s, for %s (the commit that %q names): %s; %s",
				path, looked, ref, rev, reason(err), fetch)
		}
		hash = string(b)
		if !commitHash.MatchString(hash) {
			return "", fmt.Errorf("model %q: %s holds %q, not a commit hash", path, ref, hash)
		}
	}
	snap := filepath.Join(repo, "snapshots", hash)
	fi, err := os.Stat(snap)
	if err != nil {
		return "", fmt.Errorf("model %q is neither a folder nor in the Hugging Face cache: %s, for the snapshot %s: %s; %s",
			path, looked, snap, reason(err), fetch)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("model %q: the cache's snapshot %s is not a folder", path, snap)
	}
	return snap, nil
}

// IsRepoID reports whether id is a Hugging Face repository id as
// huggingface_hub's validate_repo_id accepts it.
func IsRepoID(id string) bool {
	return repoID.MatchString(id) && !strings.Contains(id, "--") && !strings.Contains(id, "..") && !strings.HasSuffix(id, ".git")
}

// RepoFolder is the cache folder of a model repository:
// "models--namespace--name" (huggingface_hub's repo_folder_name).
func RepoFolder(id string) string {
	return "models--" + strings.ReplaceAll(id, "/", "--")
}

// validRevision reports whether rev can name a file under refs/ or
// snapshots/ without leaving them.
func validRevision(rev string) bool {
	if rev == "" || strings.HasPrefix(rev, "/") || strings.Contains(rev, `\`) {
		return false
	}
	for _, part := range strings.Split(rev, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// CacheDir is the Hugging Face hub cache and, in words, where it came
// from: huggingface_hub's constants.HF_HUB_CACHE, with its precedence,
// "~" and $VARIABLE expansion.
func CacheDir() (dir, from string) {
	if v, ok := os.LookupEnv("HF_HUB_CACHE"); ok {
		return expand(v), "from $HF_HUB_CACHE"
	}
	if v, ok := os.LookupEnv("HUGGINGFACE_HUB_CACHE"); ok {
		return expand(v), "from $HUGGINGFACE_HUB_CACHE; $HF_HUB_CACHE is unset"
	}
	if v, ok := os.LookupEnv("HF_HOME"); ok {
		return filepath.Join(expand(v), "hub"), "$HF_HOME/hub; $HF_HUB_CACHE and $HUGGINGFACE_HUB_CACHE are unset"
	}
	unset := "$HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE and $HF_HOME are unset"
	if v, ok := os.LookupEnv("XDG_CACHE_HOME"); ok {
		return filepath.Join(expand(v), "huggingface", "hub"), "$XDG_CACHE_HOME/huggingface/hub; " + unset
	}
	return filepath.Join(expand("~"), ".cache", "huggingface", "hub"), "~/.cache/huggingface/hub; " + unset + ", and so is $XDG_CACHE_HOME"
}

// expand is Python's os.path.expandvars(os.path.expanduser(p)): a leading
// "~" is the home folder; $NAME and ${NAME} are the variable's value, and
// stay as written when it is unset.
func expand(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, ok := os.LookupEnv("HOME"); ok {
			p = home + p[1:]
		} else if home, err := os.UserHomeDir(); err == nil {
			p = home + p[1:]
		}
	}
	return varRef.ReplaceAllStringFunc(p, func(ref string) string {
		name := strings.Trim(ref, "${}")
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		return ref
	})
}

// varRef is a variable reference as Python's posixpath.expandvars reads
// one.
var varRef = regexp.MustCompile(`\$(\w+|\{[^}]*\})`)

// reason is an error's cause without the path it repeats.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, fs.ErrNotExist) {
			return "absent"
		}
		return pe.Err.Error()
	}
	return err.Error()
}
