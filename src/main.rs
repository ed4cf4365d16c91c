#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let path = std::env::args().nth(1).expect("path");
    let text = std::fs::read_to_string(&path).unwrap();
    let t = std::time::Instant::now();
    let p = jaxpr::syntax::parse(&text);
    let a = jaxpr::check::check(&p.file);
    eprintln!("{:?} errors={}", t.elapsed(), p.errors.len());
    let idx = jaxpr::syntax::LineIndex::new(&text);
    for e in p.errors.iter().chain(&a.diagnostics) {
        let lc = idx.line_col(e.range.start);
        eprintln!("{}:{}: {:?} {} {} | help: {:?}", lc.line + 1, lc.col + 1, e.severity, e.kind.name(), e.message, e.help);
    }
}
