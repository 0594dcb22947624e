// Package archdoc reads the module's packages from their sources (imports,
// test imports, files, lines, functions) and writes the generated part of
// docs/architecture.md from them: the layers, the package graph and the
// counts. Its test regenerates that part and fails when the file differs,
// and checks that no package, its tests and test fixtures included,
// imports one above its layer, so the docs cannot drift from the code.
package archdoc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Package is what archdoc reads of one package directory.
type Package struct {
	Path        string   // relative to the module root, "" for the root
	Files       int      // non-test .go files
	Lines       int      // lines of the non-test files
	Funcs       int      // functions and methods of the non-test files
	Doc         string   // the first sentence of the package comment
	Imports     []string // project packages the non-test files import
	TestImports []string // project packages the test files import, beyond Imports
}

// Module reads every package under root whose import paths start with
// module, skipping testdata, hidden folders and folders without Go files.
func Module(root, module string) (map[string]*Package, error) {
	pkgs := map[string]*Package{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		p := pkgs[rel]
		if p == nil {
			p = &Package{Path: rel}
			pkgs[rel] = p
		}
		return p.read(path, module)
	})
	if err != nil {
		return nil, err
	}
	for _, p := range pkgs {
		slices.Sort(p.Imports)
		p.Imports = slices.Compact(p.Imports)
		slices.Sort(p.TestImports)
		p.TestImports = slices.DeleteFunc(slices.Compact(p.TestImports), func(s string) bool {
			_, found := slices.BinarySearch(p.Imports, s)
			return found || s == p.Path
		})
	}
	return pkgs, nil
}

// read adds one file of the package.
func (p *Package) read(path, module string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return err
	}
	test := strings.HasSuffix(path, "_test.go")
	for _, imp := range f.Imports {
		s, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return fmt.Errorf("%s: import %s: %w", path, imp.Path.Value, err)
		}
		if s != module && !strings.HasPrefix(s, module+"/") {
			continue
		}
		s = strings.TrimPrefix(strings.TrimPrefix(s, module), "/")
		if test {
			p.TestImports = append(p.TestImports, s)
		} else {
			p.Imports = append(p.Imports, s)
		}
	}
	if test {
		return nil
	}
	p.Files++
	p.Lines += strings.Count(string(src), "\n")
	if p.Doc == "" && f.Doc != nil {
		p.Doc = firstSentence(f.Doc.Text())
	}
	for _, d := range f.Decls {
		if _, ok := d.(*ast.FuncDecl); ok {
			p.Funcs++
		}
	}
	return nil
}

// Methods counts the methods declared on the named type (pointer or value
// receiver) in the package's non-test files, the files they are in, and
// the type's fields.
func Methods(dir, typeName string) (methods, files, fields int, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return 0, 0, 0, err
		}
		inFile := 0
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 && receiverName(d.Recv.List[0].Type) == typeName {
					inFile++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == typeName {
						if st, ok := ts.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								fields += max(1, len(fl.Names))
							}
						}
					}
				}
			}
		}
		methods += inFile
		if inFile > 0 {
			files++
		}
	}
	return methods, files, fields, nil
}

// receiverName is the type name of a receiver: T, *T, T[X] or *T[X].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// firstSentence is the text up to its first ". " (or the whole text), on
// one line, without the "Package x" that opens a package comment.
func firstSentence(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if i := strings.Index(text, ". "); i >= 0 {
		text = text[:i+1]
	}
	if rest, ok := strings.CutPrefix(text, "Package "); ok {
		if _, after, ok := strings.Cut(rest, " "); ok {
			text = after
		}
	}
	return text
}
