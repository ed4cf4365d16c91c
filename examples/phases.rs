//! Times the phases of `jaxpr check` on one file: parse, check, and the
//! size of what they keep. `cargo run --release --example phases FILE`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let path = std::env::args().nth(1).expect("usage: phases FILE");
    let text = std::fs::read_to_string(&path).expect("read");
    sizes();
    for round in 0..3 {
        let t0 = std::time::Instant::now();
        let p = jaxpr::syntax::parse(&text);
        let t1 = std::time::Instant::now();
        let a = jaxpr::check::check(&p.file);
        let t2 = std::time::Instant::now();
        drop(a);
        drop(p);
        let t3 = std::time::Instant::now();
        println!(
            "round {round}: parse {:?} ({:.1} MB/s), check {:?}, drop {:?}",
            t1 - t0,
            text.len() as f64 / 1e6 / (t1 - t0).as_secs_f64(),
            t2 - t1,
            t3 - t2
        );
    }
}

#[allow(dead_code)]
fn sizes() {
    use jaxpr::syntax::ast::*;
    println!(
        "Expr {} Binder {} Eqn {} Atom {} TypeExpr {} Name {} | VarInfo {} EqnInfo {} AType {} Dim {} Diag {}",
        size_of::<Expr>(),
        size_of::<Binder>(),
        size_of::<Eqn>(),
        size_of::<Atom>(),
        size_of::<TypeExpr>(),
        size_of::<Name>(),
        size_of::<jaxpr::check::VarInfo>(),
        size_of::<jaxpr::check::EqnInfo>(),
        size_of::<jaxpr::types::AType>(),
        size_of::<jaxpr::types::Dim>(),
        size_of::<jaxpr::diagnostics::Diagnostic>()
    );
}
