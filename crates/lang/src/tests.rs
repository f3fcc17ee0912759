//! Tests of the language front end.

use super::*;
use proptest::prelude::*;

fn is_prim(c: &str) -> bool {
    matches!(
        c,
        "Idle"
            | "Discard"
            | "Queue"
            | "Counter"
            | "Tee"
            | "Strip"
            | "Paint"
            | "Classifier"
            | "Switch"
            | "CheckIPHeader"
            | "FromDevice"
            | "Foo"
            | "Bar"
            | "Shaper"
            | "X"
            | "Y"
    )
}

fn parse_with(
    src: &str,
    defines: &[(String, String)],
) -> Result<(FlatConfig, Vec<Diagnostic>), (SourceMap, Vec<Diagnostic>)> {
    let mut sm = SourceMap::new();
    let f = sm.add("test.click", src);
    let opts = Options {
        defines,
        is_primitive: &is_prim,
    };
    parse_flat(&sm, f, &opts).map_err(|e| (sm, e))
}

fn flat(src: &str) -> FlatConfig {
    match parse_with(src, &[]) {
        Ok((f, _)) => f,
        Err((sm, errs)) => {
            let text: Vec<String> = errs.iter().map(|d| d.render(&sm)).collect();
            panic!("unexpected errors:\n{}", text.join("\n"));
        }
    }
}

/// Error messages rendered Click-style.
fn errors(src: &str) -> Vec<String> {
    match parse_with(src, &[]) {
        Ok(_) => panic!("expected errors for {src:?}"),
        Err((sm, errs)) => errs.iter().map(|d| d.render_click(&sm)).collect(),
    }
}

fn names(f: &FlatConfig) -> Vec<&str> {
    f.elements.iter().map(|e| e.name.as_str()).collect()
}

/// Connections as `a[p]->[q]b` strings.
fn conns(f: &FlatConfig) -> Vec<String> {
    f.connections
        .iter()
        .map(|c| {
            format!(
                "{}[{}]->[{}]{}",
                f.elements[c.from].name, c.from_port, c.to_port, f.elements[c.to].name
            )
        })
        .collect()
}

#[test]
fn declarations_and_chains() {
    let f = flat("a, b :: Queue(10); c :: Counter; a -> c -> [1]b; b[2] -> Discard;");
    assert_eq!(names(&f), ["a", "b", "c", "Discard@4"]);
    assert_eq!(f.elements[0].class, "Queue");
    assert_eq!(f.elements[1].config, "10");
    assert_eq!(
        conns(&f),
        ["a[0]->[0]c", "b[2]->[0]Discard@4", "c[0]->[1]b"]
    );
}

#[test]
fn anonymous_elements_and_inline_declarations() {
    let f = flat("src :: Idle -> Strip(14) -> c :: Counter -> [0]x :: Tee[1] -> Discard;");
    assert_eq!(names(&f), ["src", "Strip@2", "c", "x", "Discard@5"]);
    assert_eq!(
        conns(&f),
        [
            "src[0]->[0]Strip@2",
            "Strip@2[0]->[0]c",
            "c[0]->[0]x",
            "x[1]->[0]Discard@5"
        ]
    );
    assert_eq!(f.elements[1].config, "14");
}

#[test]
fn anonymous_name_collision_is_bumped() {
    let f = flat("Idle -> d :: Discard; Idle@1 :: Idle; Idle@1 -> d;");
    assert_eq!(names(&f), ["Idle@2", "d", "Idle@1"]);
}

#[test]
fn many_to_one_and_many_to_many() {
    let f = flat("a :: Idle; b :: Idle; x :: Tee; a, b -> x; x => [0,1] y :: Switch;");
    // `x => [0,1] y` expands x's ports 0 and 1.
    assert_eq!(
        conns(&f),
        ["a[0]->[0]x", "b[0]->[0]x", "x[0]->[0]y", "x[1]->[1]y"]
    );
    let f = flat("c :: Classifier; c => Paint(0), Paint(1) -> d :: Discard;");
    assert_eq!(
        conns(&f),
        [
            "c[0]->[0]Paint@2",
            "c[1]->[0]Paint@3",
            "Paint@2[0]->[0]d",
            "Paint@3[0]->[0]d"
        ]
    );
    let f = flat("c :: Classifier; c[0-2] => Discard, Discard, Discard;");
    assert_eq!(conns(&f).len(), 3);
}

#[test]
fn compound_expansion_with_prefixes() {
    let src = "
        elementclass Check { $port | input -> chk :: CheckIPHeader -> Strip($port) -> output }
        elementclass Web { input -> chk :: Check(14) -> output; }
        src :: Idle;
        p :: { input -> web :: Web -> output };
        src -> p -> Discard;
    ";
    let f = flat(src);
    assert_eq!(
        names(&f),
        ["src", "Discard@3", "p/web/chk/chk", "p/web/chk/Strip@2"]
    );
    assert_eq!(f.elements[3].config, "14");
    assert_eq!(
        conns(&f),
        [
            "src[0]->[0]p/web/chk/chk",
            "p/web/chk/chk[0]->[0]p/web/chk/Strip@2",
            "p/web/chk/Strip@2[0]->[0]Discard@3",
        ]
    );
}

#[test]
fn compound_ports_and_passthrough() {
    let src = "
        elementclass Two { input -> X -> output; input [1] -> Y -> [1] output; }
        elementclass Pass { input -> output }
        a :: Idle; b :: Discard; c :: Idle; d :: Discard;
        t :: Two;
        a -> t -> b; c -> [1] t [1] -> d;
        a -> Pass -> Pass -> d;
    ";
    let f = flat(src);
    assert_eq!(names(&f), ["a", "b", "c", "d", "t/X@1", "t/Y@2"]);
    let cs = conns(&f);
    for want in [
        "a[0]->[0]t/X@1",
        "t/X@1[0]->[0]b",
        "c[0]->[0]t/Y@2",
        "t/Y@2[0]->[0]d",
        "a[0]->[0]d",
    ] {
        assert!(cs.contains(&want.to_string()), "{want} missing from {cs:?}");
    }
    assert_eq!(cs.len(), 5);
}

#[test]
fn anonymous_compound_instance_names() {
    let f = flat("Idle -> { input -> x :: Counter -> output } -> Discard;");
    // Click lists a body's own elements first, then each compound's.
    assert_eq!(names(&f), ["Idle@1", "Discard@3", "@2/x"]);
    let f = flat("elementclass C { input -> Counter -> output } Idle -> C -> Discard;");
    assert_eq!(names(&f), ["Idle@1", "Discard@3", "C@2/Counter@1"]);
    let f = flat("elementclass D { input -> Counter -> output } elementclass C { input -> D -> Tee -> output } a :: Idle -> c1 :: C -> c2 :: C -> Discard;");
    assert_eq!(
        names(&f),
        [
            "a",
            "Discard@4",
            "c1/Tee@2",
            "c1/D@1/Counter@1",
            "c2/Tee@2",
            "c2/D@1/Counter@1"
        ]
    );
}

#[test]
fn implicit_input_output() {
    let f = flat("elementclass C { -> Counter -> ; [1] -> Tee -> [1] } a :: Idle; a -> C -> Discard; a -> [1] C@x :: C [1] -> Discard;");
    assert!(conns(&f).contains(&"a[0]->[0]C@2/Counter@1".to_string()));
}

#[test]
fn keyword_formals_and_rest() {
    let src = "
        elementclass K { $a, COUNT $c, __REST__ $r | input -> Foo($a, $c, $r) -> output }
        Idle -> K(1, 2, COUNT 3, FOO 4) -> Discard;
    ";
    let f = flat(src);
    assert_eq!(f.elements[2].config, "1, 3, 2, FOO 4");
    let e =
        errors("elementclass K { COUNT $c | input -> Foo($c) -> output } Idle -> K(1) -> Discard;");
    assert_eq!(
        e,
        ["test.click:1: too many arguments to compound `K` (expected 0, found 1)"]
    );
}

#[test]
fn overloading_and_extension() {
    let src = "
        elementclass MyQueue {
            input -> Queue -> output;
        ||
            $cap | input -> Queue($cap) -> output;
        }
        elementclass Queue { $cap, $rate | input -> Queue($cap) -> Shaper($rate) -> output; || ... }
        Idle -> MyQueue -> Discard;
        Idle -> MyQueue(5) -> Discard;
        Idle -> Queue(7, 100) -> Discard;
        Idle -> Queue(8) -> Discard;
    ";
    let f = flat(src);
    let classes: Vec<(&str, &str, &str)> = f
        .elements
        .iter()
        .map(|e| (e.name.as_str(), e.class.as_str(), e.config.as_str()))
        .collect();
    assert!(classes.contains(&("MyQueue@2/Queue@1", "Queue", "")));
    assert!(classes.contains(&("MyQueue@5/Queue@1", "Queue", "5")));
    assert!(classes.contains(&("Queue@8/Shaper@2", "Shaper", "100")));
    assert!(classes.contains(&("Queue@11", "Queue", "8")));
    let e = errors(
        "elementclass A { $a | input -> output || $a, $b | input -> output } Idle -> A -> Discard;",
    );
    assert_eq!(e.len(), 1);
    assert!(
        e[0].contains("no match for `A` with 0 arguments, 1 input, 1 output"),
        "{e:?}"
    );
}

#[test]
fn synonyms_and_scoping() {
    let f = flat("elementclass Q Queue; elementclass C { elementclass In { input -> Counter -> output } input -> In -> output } Idle -> Q -> C -> Discard;");
    assert_eq!(f.elements[1].class, "Queue");
    assert_eq!(f.elements[3].name, "C@3/In@1/Counter@1");
    // `In` is not visible outside `C`.
    let e = errors(
        "elementclass C { elementclass In { input -> output } input -> In -> output } x :: In;",
    );
    assert_eq!(e, ["test.click:1: unknown element class 'In'"]);
}

#[test]
fn defines_and_overrides() {
    let src =
        "define($DEV eth0, $N 3); FromDevice($DEV, \"$DEV x\", '$DEV', ${N}0, ${M-9}) -> Discard;";
    let f = flat(src);
    assert_eq!(f.elements[0].config, "eth0, \"eth0 x\", '$DEV', 30, 9");
    let (f, _) = parse_with(src, &[("DEV".into(), "eth1".into())]).expect("ok");
    assert_eq!(f.elements[0].config, "eth1, \"eth1 x\", '$DEV', 30, 9");
    let (f, _) = parse_with("Foo($X)", &[("$X".into(), "1".into())]).expect("ok");
    assert_eq!(f.elements[0].config, "1");
    // Compound-local defines and formals.
    let f = flat("elementclass C { $a | define($b $a/2); input -> Foo($b) -> output } Idle -> C(7) -> Discard;");
    assert_eq!(f.elements[2].config, "7/2");
}

#[test]
fn comments_and_directives() {
    let f =
        flat("# 1 \"x.click\"\n// c\na :: Foo(1, /* two */ 2 // three\n) /* x */ -> b :: Bar;\n");
    assert_eq!(f.elements[0].config, "1, 2");
    assert_eq!(conns(&f), ["a[0]->[0]b"]);
}

#[test]
fn requirements() {
    let f = flat("require(package foo, package \"bar\"); require(baz, compact_config)");
    let reqs: Vec<(&str, &str)> = f
        .requirements
        .iter()
        .map(|(k, n, _)| (k.as_str(), n.as_str()))
        .collect();
    assert_eq!(
        reqs,
        [
            ("package", "foo"),
            ("package", "bar"),
            ("package", "baz"),
            ("compact_config", "")
        ]
    );
    assert!(f.compact_config());
    assert_eq!(
        errors("require(library x.click)"),
        ["test.click:1: `require(library FILE)` is not supported: pronto does not load configuration libraries; include the file's text instead"]
    );
}

#[test]
fn duplicate_connections_kept_once() {
    let f = flat("a :: Idle; b :: Discard; a -> b; a -> b; a [0] -> [0] b;");
    assert_eq!(f.connections.len(), 1);
}

#[test]
fn error_messages() {
    assert_eq!(
        errors("a :: Idle;\na -> nope;"),
        ["test.click:2: undeclared element 'nope'"]
    );
    assert_eq!(
        errors("a :: Idle;\n\nb :: UnknownThing;"),
        ["test.click:3: unknown element class 'UnknownThing'"]
    );
    assert_eq!(
        errors("a :: Idle;\na :: Discard;"),
        ["test.click:2: redeclaration of element 'a'\ntest.click:1: element 'a' previously declared here"]
    );
    // An undefined variable is left as written, as in Click.
    assert_eq!(flat("Foo($x, ${y});").elements[0].config, "$x, ${y}");
    assert_eq!(
        errors("elementclass C { $a, $b | input -> output }\nIdle -> C(1) -> Discard;"),
        ["test.click:2: too few arguments to compound `C` (expected 2, found 1)"]
    );
    assert_eq!(
        errors("elementclass C { $a | input -> output }\nIdle -> C(1, 2) -> Discard;"),
        ["test.click:2: too many arguments to compound `C` (expected 1, found 2)"]
    );
    assert_eq!(
        errors("a -> ;"),
        [
            "test.click:1: undeclared element 'a'",
            "test.click:1: syntax error near `;`"
        ]
    );
    assert_eq!(
        errors("Queue :: Queue;"),
        ["test.click:1: class 'Queue' used as element name"]
    );
    assert_eq!(
        errors("define($a 1, $a 2);"),
        ["test.click:1: parameter `$a` multiply defined\ntest.click:1: `$a` first defined here"]
    );
    assert_eq!(
        errors("elementclass C { input [1] -> output }"),
        ["test.click:1: compound `input` port 0 unused"]
    );
    assert_eq!(
        errors("a :: Idle; b :: Idle; c :: Discard; d :: Discard; a, b -> c, d;"),
        ["test.click:1: many-to-many connections require `=>`"]
    );
    assert_eq!(
        errors("x :: Foo(1"),
        ["test.click:1: unterminated configuration string"]
    );
    assert_eq!(
        errors("1 :: Foo;"),
        ["test.click:1: element name '1' has all-digit component"]
    );
}

#[test]
fn reports_all_errors_and_recovers() {
    let e = errors("a -> b;\nx :: Unknown1;\n} ;\nFoo($y) -> c :: Discard;\nc :: Idle;");
    assert_eq!(e.len(), 5, "{e:?}");
    assert!(e[0].contains("undeclared element 'a'"));
    assert!(e[1].contains("undeclared element 'b'"));
    assert!(e[2].contains("unknown element class 'Unknown1'"));
    assert!(e[3].contains("syntax error near `}`"));
    assert!(e[4].contains("redeclaration of element 'c'"));
}

#[test]
fn rustc_style_rendering() {
    let Err((sm, errs)) = parse_with("a :: Idle;\na -> Bogus(1) -> Discard;", &[]) else {
        panic!("expected error");
    };
    assert_eq!(
        errs[0].render(&sm),
        "error: unknown element class 'Bogus'\n --> test.click:2:6\n  |\n2 | a -> Bogus(1) -> Discard;\n  |      ^^^^^\n"
    );
    let Err((sm, errs)) = parse_with("a :: Idle;\n  a :: Idle;", &[]) else {
        panic!("expected error");
    };
    assert_eq!(
        errs[0].render(&sm),
        "error: redeclaration of element 'a'\n --> test.click:2:3\n  |\n2 |   a :: Idle;\n  |   ^\nnote: element 'a' previously declared here\n --> test.click:1:1\n  |\n1 | a :: Idle;\n  | ^\n"
    );
}

#[test]
fn to_click_round_trip_simple() {
    let src = "require(package x); elementclass C { $a | input -> Strip($a) -> [1]output; input[1] -> Tee -> output } Idle -> c :: C(14) [1] -> Discard; Idle -> [1] c -> Discard;";
    let f = flat(src);
    let text = f.to_click();
    let g = flat(&text);
    assert_eq!(names(&f), names(&g));
    assert_eq!(conns(&f), conns(&g));
    assert_eq!(f.requirements.len(), g.requirements.len());
}

fn strip_spans(f: &FlatConfig) -> (Vec<(String, String, String)>, Vec<String>) {
    (
        f.elements
            .iter()
            .map(|e| (e.name.clone(), e.class.clone(), e.config.clone()))
            .collect(),
        conns(f),
    )
}

/// Generates random but valid configurations.
fn config_strategy() -> impl Strategy<Value = String> {
    let class = prop::sample::select(vec![
        "Queue", "Counter", "Tee", "Strip", "Discard", "C", "D",
    ]);
    let cfg = prop::sample::select(vec!["", "1", "1, 2", "\"a, b\"", "$v", "X 3", "'q'"]);
    let decl = (class, cfg, 0usize..3, 0usize..3);
    prop::collection::vec(decl, 1..12).prop_map(|decls| {
        let mut s = String::from(
            "define($v 5)\nelementclass C { $x | input -> Strip($x) -> output; input [1] -> output }\n\
             elementclass D { input -> c :: C(1) -> Counter -> output }\n",
        );
        let mut prev_out = 0;
        for (i, (class, cfg, ip, op)) in decls.iter().enumerate() {
            let (cfg, ip, op) = match *class {
                "C" => ("7", *ip.min(&1), 0),
                "D" => ("", 0, 0),
                _ => (*cfg, *ip, *op),
            };
            let _ = writeln!(s, "e{i} :: {class}({cfg});");
            if i > 0 {
                let _ = writeln!(s, "e{} [{prev_out}] -> [{ip}] e{i};", i - 1);
            }
            prev_out = op;
        }
        s
    })
}

proptest! {
    #[test]
    fn never_panics(s in "\\PC{0,200}") {
        let _ = parse_with(&s, &[]);
    }

    #[test]
    fn never_panics_on_language_soup(parts in prop::collection::vec(prop::sample::select(vec![
        "a", "B", "::", "->", "=>", "[", "]", "0", "1", ",", ";", "{", "}", "(", ")", "|", "||",
        "...", "$x", "elementclass", "define", "require", "input", "output", "\"", "'", "//", "/*",
        "*/", "\n", " ", "#", "-", "Idle", "C", "@", "/",
    ]), 0..60)) {
        let s: String = parts.concat();
        let _ = parse_with(&s, &[]);
        let spaced = parts.join(" ");
        match parse_with(&spaced, &[]) {
            Err((sm, errs)) => {
                for e in errs {
                    let _ = e.render(&sm);
                    let _ = e.render_click(&sm);
                }
            }
            Ok((f, _)) => {
                // Whatever is accepted survives a round trip.
                let g = flat(&f.to_click());
                prop_assert_eq!(strip_spans(&f), strip_spans(&g));
            }
        }
    }

    #[test]
    fn round_trip(src in config_strategy()) {
        let f = flat(&src);
        let text = f.to_click();
        let g = flat(&text);
        prop_assert_eq!(strip_spans(&f), strip_spans(&g));
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let src = "Idle -> {".repeat(200) + &"}".repeat(200);
    let e = errors(&src);
    assert!(e.iter().any(|m| m.contains("nested too deeply")), "{e:?}");
    let mut chain = String::from("elementclass A0 { input -> Counter -> output }\n");
    for i in 1..300 {
        let _ = writeln!(
            chain,
            "elementclass A{i} {{ input -> A{} -> output }}",
            i - 1
        );
    }
    chain.push_str("Idle -> A299 -> Discard;");
    let e = errors(&chain);
    assert!(e.iter().any(|m| m.contains("nested too deeply")), "{e:?}");
    let mut blowup = String::from("elementclass B0 { input -> Counter -> output }\n");
    for i in 1..40 {
        let _ = writeln!(
            blowup,
            "elementclass B{i} {{ input -> B{p} -> B{p} -> output }}",
            p = i - 1
        );
    }
    blowup.push_str("Idle -> B39 -> Discard;");
    let e = errors(&blowup);
    assert!(e.iter().any(|m| m.contains("too large")), "{e:?}");
}

/// Renders every diagnostic rustc-style, one after the other.
fn rendered(sm: &SourceMap, diags: &[Diagnostic]) -> String {
    diags.iter().map(|d| d.render(sm)).collect()
}

#[test]
fn doubling_defines_hit_the_expansion_limit() {
    // Each variable is two copies of the one before: `$A17` would be
    // 8 * 2^17 bytes = 1 MiB, `$A20` 8 MiB.
    let mut defs = vec!["$A0 abcdefgh".to_string()];
    defs.extend((1..=20).map(|i| format!("$A{i} $A{p}$A{p}", p = i - 1)));
    let src = format!(
        "define({});\nIdle -> Foo($A20) -> Discard;",
        defs.join(", ")
    );
    let Err((sm, errs)) = parse_with(&src, &[]) else {
        panic!("a 8 MiB define was accepted");
    };
    let first = &errs[0];
    assert_eq!(
        first.message,
        "expansion of `$A17` too large: substituting variables may add at most 1048576 bytes (1 MiB) to one `define` value, configuration string or compound argument"
    );
    // `$A17` is 1 MiB: the span is the second `$A17` in `$A18 $A17$A17`.
    let at = src.find("$A18 $A17$A17").expect("in source") + "$A18 $A17".len();
    let span = first.span.expect("span");
    assert_eq!((span.start as usize, span.end as usize), (at, at + 4));
    let text = first.render(&sm);
    assert!(
        text.contains(&format!(" --> test.click:1:{}\n", at + 1)),
        "{text}"
    );
    assert!(text.contains("= note: while defining `$A18`"), "{text}");
    assert_eq!(
        first.render_click(&sm),
        format!("test.click:1: {}", first.message)
    );
    // Later variables are empty, not undefined: one error per cause.
    assert!(
        errs.iter().all(|d| !d.message.contains("undefined")),
        "{}",
        rendered(&sm, &errs)
    );
}

#[test]
fn quoted_doubling_defines_are_stopped_quickly() {
    // Inside double quotes every value is escaped again, so the text grows
    // faster than twofold at each step.
    let mut defs = vec!["$A0 x".to_string()];
    defs.extend((1..=15).map(|i| format!("$A{i} \"$A{p}$A{p}\"", p = i - 1)));
    let src = format!("define({});\nIdle -> Discard;", defs.join(", "));
    let Err((sm, errs)) = parse_with(&src, &[]) else {
        panic!("expansion bomb accepted");
    };
    assert!(
        errs[0].message.starts_with("expansion of `$A") && errs[0].message.contains("too large"),
        "{}",
        rendered(&sm, &errs)
    );
    assert!(rendered(&sm, &errs).len() < 10_000);
}

#[test]
fn compound_arguments_hit_the_expansion_limit() {
    let mut src = String::from("elementclass C0 { $a | input -> Foo($a) -> output }\n");
    for i in 1..=24 {
        let _ = writeln!(
            src,
            "elementclass C{i} {{ $a | input -> C{p}($a$a) -> output }}",
            p = i - 1
        );
    }
    src.push_str("Idle -> C24(xy) -> Discard;");
    let Err((sm, errs)) = parse_with(&src, &[]) else {
        panic!("a 32 MiB compound argument was accepted");
    };
    let d = &errs[0];
    assert!(
        d.message.starts_with("expansion of `$a` too large"),
        "{}",
        d.message
    );
    assert!(
        d.notes
            .iter()
            .any(|n| n.starts_with("while expanding the arguments of `C24@2/C23@1/")),
        "{}",
        d.render(&sm)
    );
    // The span points at a `$a` inside `C(N-1)($a$a)`.
    let span = d.span.expect("span");
    assert_eq!(&src[span.start as usize..span.end as usize], "$a");
}

#[test]
fn substitution_total_is_limited() {
    // 70 elements each given a 1 MiB value: each expansion is within its
    // own limit, the configuration as a whole is not.
    let big = "x".repeat(1 << 20);
    let mut src = String::from("define($BIG ");
    src.push_str(&big);
    src.push_str(");\n");
    for i in 0..70 {
        let _ = writeln!(src, "e{i} :: Foo($BIG);");
    }
    let Err((sm, errs)) = parse_with(&src, &[]) else {
        panic!("70 MiB of substitutions accepted");
    };
    assert_eq!(errs.len(), 1, "{}", errs[0].message);
    assert_eq!(
        errs[0].message,
        "expansion of `$BIG` too large: substituting variables may add at most 67108864 bytes (64 MiB) to the whole configuration"
    );
    // Each use adds 1 MiB less the 4 bytes of `$BIG`: the first 64 fit,
    // the 65th (`e64`, line 66) does not.
    assert_eq!(sm.line_col(errs[0].span.expect("span")), (66, 12));
}

#[test]
fn errors_are_capped() {
    // One 300 KB line with 8,000 bad port numbers.
    let line: Vec<String> = (0..8000)
        .map(|i| format!("Idle [9999999{i:04}] -> Discard"))
        .collect();
    let src = line.join("; ") + "\n";
    let Err((sm, errs)) = parse_with(&src, &[]) else {
        panic!("expected errors");
    };
    assert_eq!(errs.len(), MAX_ERRORS + 1);
    assert_eq!(errs[0].message, "port number too large (at most 65535)");
    let last = errs.last().expect("one");
    assert_eq!(last.level, Level::Note);
    assert_eq!(last.message, "... and 7900 more errors");
    assert_eq!(last.render_click(&sm), "note: ... and 7900 more errors");
    // Each error shows a window of the line, not the whole line.
    let text = rendered(&sm, &errs);
    assert!(text.len() < 100 * 400, "{} bytes", text.len());
}

#[test]
fn long_lines_are_elided_around_the_span() {
    let pad = "Idle -> Discard; ".repeat(20);
    let src = format!("{pad}x -> Bogus -> Discard; {pad}\nDiscard;");
    let Err((sm, errs)) = parse_with(&src, &[]) else {
        panic!("expected errors");
    };
    let col = src.find("Bogus").expect("in source") + 1;
    assert_eq!(
        errs.iter().map(|d| d.render_click(&sm)).collect::<Vec<_>>(),
        [
            "test.click:1: undeclared element 'x'",
            "test.click:1: unknown element class 'Bogus'"
        ]
    );
    // 40 characters before the span, 80 from its start, `...` at each cut.
    let before = &src[col - 1 - 40..col - 1];
    let after = &src[col - 1..col - 1 + 80];
    assert_eq!(
        errs[1].render(&sm),
        format!(
            "error: unknown element class 'Bogus'\n --> test.click:1:{col}\n  |\n1 | ...{before}{after}...\n  | {}^^^^^\n",
            " ".repeat(43)
        )
    );
    // A span at the start of a long line: no leading `...`.
    let src = format!("Bogus; {pad}");
    let Err((sm, errs)) = parse_with(&src, &[]) else {
        panic!("expected errors");
    };
    assert_eq!(
        errs[0].render(&sm),
        format!(
            "error: unknown element class 'Bogus'\n --> test.click:1:1\n  |\n1 | {}...\n  | ^^^^^\n",
            &src[..80]
        )
    );
    // A span with more than the window after it: the line is cut there.
    let src = format!("{pad}x :: Bogus({});", "y".repeat(300));
    let Err((sm, errs)) = parse_with(&src, &[]) else {
        panic!("expected errors");
    };
    let text = errs[0].render(&sm);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[3].len(), "1 | ...".len() + 40 + 80 + 3, "{text}");
    assert_eq!(lines[4], format!("  | {}{}", " ".repeat(43), "^".repeat(5)));
}

#[test]
fn overflowing_port_numbers_are_out_of_range() {
    assert_eq!(
        errors("Idle [99999999999999999999999] -> Discard;"),
        ["test.click:1: port number too large (at most 65535)"]
    );
    assert_eq!(
        errors("Idle [65536] -> Discard;"),
        ["test.click:1: port number too large (at most 65535)"]
    );
}

#[test]
fn long_names_in_deep_compounds_are_limited() {
    // Each level holds two instances of the level below under 10 KB
    // names: 2^17 elements whose names repeat 17 of them (22 GB).
    let long = |c: char| c.to_string().repeat(10_000);
    let mut src = String::from("elementclass C0 { input -> Counter -> output }\n");
    for i in 1..=17 {
        let _ = writeln!(
            src,
            "elementclass C{i} {{ input -> {a} :: C{p} -> {b} :: C{p} -> output }}",
            a = long('a'),
            b = long('b'),
            p = i - 1
        );
    }
    src.push_str("Idle -> C17 -> Discard;");
    let Err((sm, errs)) = parse_with(&src, &[]) else {
        panic!("accepted");
    };
    assert_eq!(errs.len(), 1, "{}", rendered(&sm, &errs));
    assert_eq!(
        errs[0].message,
        "configuration too large: element names add up to more than 67108864 bytes (64 MiB) after expansion"
    );
}

#[test]
fn element_groups_connect_through_their_ports() {
    // Click's Shaper example: the group's elements belong to the file.
    let f = flat(
        "s :: Shaper(10) => ( [0] -> c :: Counter -> [0]; [1] -> [1] ) => x :: Tee; x -> Discard;",
    );
    // Click counts three tunnels per group in anonymous numbering.
    assert_eq!(names(&f), ["s", "c", "x", "Discard@7"]);
    let mut cs = conns(&f);
    cs.sort();
    assert_eq!(
        cs,
        [
            "c[0]->[0]x",
            "s[0]->[0]c",
            "s[1]->[1]x",
            "x[0]->[0]Discard@7"
        ]
    );
    // A group at the start of a statement, several paths to one port.
    let f = flat("( Idle -> [0]; Idle -> [0]; Idle -> [1]; ) => t :: Tee; t -> Discard;");
    let mut cs = conns(&f);
    cs.sort();
    assert_eq!(
        cs,
        [
            "Idle@4[0]->[0]t",
            "Idle@5[0]->[0]t",
            "Idle@6[0]->[1]t",
            "t[0]->[0]Discard@8"
        ]
    );
}

#[test]
fn element_group_errors() {
    assert_eq!(
        errors("Idle -> ( [1] -> Discard ) ;"),
        ["test.click:1: <anonymous group> input 0 unused"]
    );
    assert_eq!(
        errors("Idle -> ( -> Discard ;"),
        ["test.click:1: unterminated element group (missing `)`)"]
    );
}

#[test]
fn landmarks_follow_line_directives() {
    // What `cpp` leaves when A includes B at its fourth line.
    let src = "# 1 \"A\"\n\nx :: Idle;\n# 1 \"B\" 1\nx :: Idle;\n# 5 \"A\" 2\ny :: Idle;\n";
    assert_eq!(
        errors(src),
        ["B:1: redeclaration of element 'x'\nA:2: element 'x' previously declared here"]
    );
    let mut sm = SourceMap::new();
    let f = sm.add("c.click", "xx;\n#line 100 \"other.click\"\nyy;\nzz;\n");
    let at = |s: &str| {
        let k = sm.text(f).find(s).expect("present");
        sm.landmark(Span::new(f, k, k + 1))
    };
    assert_eq!(at("xx"), ("c.click".to_string(), 1));
    assert_eq!(at("yy"), ("other.click".to_string(), 100));
    assert_eq!(at("zz"), ("other.click".to_string(), 101));
}
