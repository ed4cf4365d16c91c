//! The graph model: what a printed jaxpr file says as nodes and edges.
//!
//! Every jaxpr of the file is a [`Block`]: its constvars, inputs, equations
//! and outputs are nodes, and each value that flows from one node to another
//! is an [`Edge`] labelled with its printed type. Literal operands are
//! folded into their equation's label (`mul 2.0 ·`). An
//! equation whose parameters hold jaxprs (`pjit`'s `jaxpr`, `cond`'s
//! `branches`, `scan`'s body, `while`'s `cond_jaxpr` and `body_jaxpr`,
//! `custom_jvp_call`'s `call_jaxpr`, Catalyst's `for_loop`, `while_loop` and
//! quantum regions, ...) owns them as child blocks: that node is a group,
//! drawn collapsed as one node or expanded with its blocks inside. A file's
//! `let` jaxprs are blocks of their own at the top, beside the main jaxpr; an
//! equation that names one (`jaxpr=NAME`) links to it.
//!
//! Within a jaxpr, equations are grouped as the program was written: by the
//! name stack and the Python function of their source comments
//! (`pretty_print(source_info=True, name_stack=True)`), each group a
//! [`NodeKind::Scope`] node holding one block (see [`scope_items`]).
//!
//! Jaxprs are closed, so every edge joins two nodes of one jaxpr; it may
//! cross the border of a scope group. The model is built from the syntax
//! tree alone (types as printed), so a file with errors still draws as far
//! as it parses.

use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom, Eqn, ExprKind, Jaxpr};
use rustc_hash::FxHashMap;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct NodeId(pub u32);

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct BlockId(pub u32);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NodeKind {
    /// An input (`invars`) of a jaxpr.
    Input,
    /// A constvar (before the `;` of `lambda`).
    Const,
    /// An equation.
    Equation,
    /// One output of a jaxpr (the atoms after `in`).
    Output,
    /// Equations of one name stack and Python function (`jvp(dense)`):
    /// a group holding one block, whose edges cross its border.
    Scope,
}

impl NodeKind {
    /// The class name renderings use (`node eqn`, `node input`, ...).
    pub fn css_class(self) -> &'static str {
        match self {
            NodeKind::Input => "input",
            NodeKind::Const => "const",
            NodeKind::Equation => "eqn",
            NodeKind::Output => "output",
            NodeKind::Scope => "scope",
        }
    }
}

/// An extra line on an equation's node (its cost, say): shown under its
/// label, listed in its tooltip and exported as a Model Explorer attribute.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Annotation {
    pub key: String,
    pub value: String,
}

/// Adds [`Annotation`]s to equation nodes while the graph is built: the hook
/// through which a caller that has checked the file (and so knows each
/// equation's cost from the primitive registry) labels the nodes. The
/// equation is the syntax tree's, so the caller finds it by its range.
pub trait EquationAnnotator {
    fn annotate(&self, eqn: &Eqn, out: &mut Vec<Annotation>);
    /// What the equation moves between devices, when it is a collective
    /// (`all-reduce 168 B/device`): the graph draws it as one and puts this
    /// on the edges of its results.
    fn collective(&self, _eqn: &Eqn) -> Option<String> {
        None
    }
}

/// No annotations: the graph of the text alone.
pub struct NoAnnotations;

impl EquationAnnotator for NoAnnotations {
    fn annotate(&self, _: &Eqn, _: &mut Vec<Annotation>) {}
}

#[derive(Clone, Debug)]
pub struct Node {
    pub kind: NodeKind,
    /// The primitive for an equation, followed by its operands when one is
    /// a literal (`mul 2.0 ·`: `·` for a variable); the variable's name for
    /// an input, constvar or output; the scope for a scope group.
    pub label: String,
    /// A second, shorter line: an equation's `name=` parameter (`pjit`'s
    /// function name), an input's or output's type, a scope group's
    /// number of equations.
    pub sublabel: String,
    pub block: BlockId,
    /// The jaxprs this equation holds in its parameters (a group when not
    /// empty), in parameter order; a scope group's one block.
    pub children: Vec<BlockId>,
    /// The `let` jaxpr an equation names in a parameter (`jaxpr=NAME`).
    pub calls: Option<BlockId>,
    /// Where the node is in the text: the whole equation, the binder or the
    /// output atom; a scope group's equations.
    pub range: TextRange,
    /// The names and types of the values this node defines, in order (an
    /// equation's results; the one value of an input or constvar).
    pub values: Vec<Value>,
    pub annotations: Vec<Annotation>,
    /// For a collective, what it moves between devices
    /// ([`EquationAnnotator::collective`]).
    pub collective: Option<String>,
    /// The node's text as printed, on one line and cut to
    /// [`TOOLTIP_CHARS`] (tooltips, search).
    pub text: String,
}

/// How much of a node's printed text [`Node::text`] keeps.
pub const TOOLTIP_CHARS: usize = 240;

#[derive(Clone, Debug)]
pub struct Value {
    pub name: String,
    /// The printed type (`f32[3,4]`), empty when the text gives none.
    pub ty: String,
}

/// A value flowing from the `from_port`-th value of `from` to the
/// `to_port`-th operand of `to` (an operand's position among the
/// equation's operands, literals included).
#[derive(Clone, Debug)]
pub struct Edge {
    pub from: NodeId,
    pub from_port: u32,
    pub to: NodeId,
    pub to_port: u32,
}

#[derive(Clone, Debug)]
pub struct Block {
    /// `main`, `let NAME`, or the parameter that holds it (`jaxpr`,
    /// `branches[1]`, `body_jaxpr`); for a scope group's block, the scopes
    /// from its jaxpr down to it (`transpose(jvp())/loss`).
    pub title: String,
    /// The equation whose parameter holds this jaxpr, or the scope group
    /// holding this block; `None` for the file's main jaxpr and its `let`s.
    pub owner: Option<NodeId>,
    /// Its nodes, in text order: constvars, inputs, the equations (a scope
    /// group where its first equation is), the outputs.
    pub nodes: Vec<NodeId>,
    pub range: TextRange,
}

#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub blocks: Vec<Block>,
    /// The blocks drawn at the top: the file's `let`s, then the main jaxpr.
    pub roots: Vec<BlockId>,
}

impl Graph {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }

    pub fn block(&self, id: BlockId) -> &Block {
        &self.blocks[id.0 as usize]
    }

    /// The type of the value an edge carries.
    pub fn edge_type(&self, edge: &Edge) -> &str {
        self.node(edge.from)
            .values
            .get(edge.from_port as usize)
            .map_or("", |v| v.ty.as_str())
    }

    /// The label of a node's `port`-th value, drawn under the node where
    /// its edges leave: its type, and for a result of a collective what the
    /// collective moves (`f32[8,4] ⇄ all-reduce 224 B/device`).
    pub fn value_label(&self, node: NodeId, port: u32) -> std::borrow::Cow<'_, str> {
        let node = self.node(node);
        let ty = node.values.get(port as usize).map_or("", |v| v.ty.as_str());
        match &node.collective {
            Some(moved) => format!("{ty} ⇄ {moved}").into(),
            None => ty.into(),
        }
    }

    /// An edge's label: the label of the value it carries.
    pub fn edge_label(&self, edge: &Edge) -> std::borrow::Cow<'_, str> {
        self.value_label(edge.from, edge.from_port)
    }

    /// The name of the value an edge carries.
    pub fn edge_value(&self, edge: &Edge) -> &str {
        self.node(edge.from)
            .values
            .get(edge.from_port as usize)
            .map_or("", |v| v.name.as_str())
    }

    pub fn equation_count(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Equation)
            .count()
    }

    /// The scope groups and groups around a node, innermost first.
    pub fn groups_around(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        std::iter::successors(self.block(self.node(node).block).owner, |&group| {
            self.block(self.node(group).block).owner
        })
    }

    /// How many groups `block` is nested in (0 for a root).
    pub fn depth(&self, block: BlockId) -> u32 {
        let mut depth = 0;
        let mut at = block;
        while let Some(owner) = self.block(at).owner {
            depth += 1;
            at = self.node(owner).block;
        }
        depth
    }
}

/// Builds the graph of a parsed file. `text` is the file the tree was parsed
/// from (types are shown as printed).
pub fn build(file: &ast::SourceFile, text: &str, annotator: &dyn EquationAnnotator) -> Graph {
    let mut builder = Builder {
        graph: Graph::default(),
        text,
        annotator,
        lets: Vec::new(),
    };
    for item in &file.lets {
        let id = builder.jaxpr(&item.jaxpr, format!("let {}", item.name.text), None);
        builder.lets.push((item.name.text.to_string(), id));
        builder.graph.roots.push(id);
    }
    if let Some(main) = &file.main {
        let id = builder.jaxpr(main, "main".to_string(), None);
        builder.graph.roots.push(id);
    }
    builder.graph
}

struct Builder<'a> {
    graph: Graph,
    text: &'a str,
    annotator: &'a dyn EquationAnnotator,
    /// The `let` jaxprs in scope, innermost last (a parameter's own `let`s
    /// are pushed while its jaxpr is built).
    lets: Vec<(String, BlockId)>,
}

impl Builder<'_> {
    fn slice(&self, range: TextRange) -> &str {
        self.text.get(range.as_usize()).unwrap_or("")
    }

    fn type_text(&self, ty: Option<&ast::TypeExpr>) -> String {
        ty.map(|t| compact(self.slice(t.range))).unwrap_or_default()
    }

    fn add_node(&mut self, mut node: Node) -> NodeId {
        let id = NodeId(self.graph.nodes.len() as u32);
        node.text = tooltip(self.slice(node.range));
        let block = node.block;
        self.graph.nodes.push(node);
        self.graph.blocks[block.0 as usize].nodes.push(id);
        id
    }

    fn jaxpr(&mut self, jaxpr: &Jaxpr, title: String, owner: Option<NodeId>) -> BlockId {
        let block = self.new_block(title, owner, jaxpr.range);
        let lets_in_scope = self.lets.len();
        for item in &jaxpr.lets {
            let id = self.jaxpr(&item.jaxpr, format!("let {}", item.name.text), owner);
            self.lets.push((item.name.text.to_string(), id));
        }
        // What each name in scope is: the node that defines it and the port.
        let mut scope: FxHashMap<&str, (NodeId, u32)> = FxHashMap::default();
        for (kind, binders) in [
            (NodeKind::Const, &jaxpr.constvars),
            (NodeKind::Input, &jaxpr.invars),
        ] {
            for binder in binders.iter() {
                let ty = self.type_text(binder.ty.as_ref());
                let id = self.add_node(Node {
                    kind,
                    label: binder.name.text.to_string(),
                    sublabel: ty.clone(),
                    block,
                    children: Vec::new(),
                    calls: None,
                    range: binder.range,
                    values: vec![Value {
                        name: binder.name.text.to_string(),
                        ty,
                    }],
                    annotations: Vec::new(),
                    collective: None,
                    text: String::new(),
                });
                if !binder.is_dropped() {
                    scope.insert(&binder.name.text, (id, 0));
                }
            }
        }
        let paths: Vec<Vec<&str>> = jaxpr.eqns.iter().map(scope_path).collect();
        let items = scope_items(&paths);
        self.items(&items, &jaxpr.eqns, block, "", &mut scope);
        for atom in &jaxpr.outvars {
            // A literal output is its node's label and comes from nowhere.
            let source = match atom {
                Atom::Var(name) => scope.get(&*name.text).copied(),
                Atom::Lit(_) => None,
            };
            let ty = match (source, atom) {
                (Some((node, port)), _) => self.graph.nodes[node.0 as usize].values[port as usize]
                    .ty
                    .clone(),
                (None, Atom::Lit(lit)) => self.type_text(lit.ty.as_ref()),
                (None, Atom::Var(_)) => String::new(),
            };
            let label = compact(self.slice(atom.range()));
            let id = self.add_node(Node {
                kind: NodeKind::Output,
                label,
                sublabel: ty,
                block,
                children: Vec::new(),
                calls: None,
                range: atom.range(),
                values: Vec::new(),
                annotations: Vec::new(),
                collective: None,
                text: String::new(),
            });
            if let Some((from, from_port)) = source {
                self.graph.edges.push(Edge {
                    from,
                    from_port,
                    to: id,
                    to_port: 0,
                });
            }
        }
        self.lets.truncate(lets_in_scope);
        block
    }

    fn new_block(&mut self, title: String, owner: Option<NodeId>, range: TextRange) -> BlockId {
        let block = BlockId(self.graph.blocks.len() as u32);
        self.graph.blocks.push(Block {
            title,
            owner,
            nodes: Vec::new(),
            range,
        });
        block
    }

    /// The equations of `items` into `block`, each scope group as a node
    /// holding a block of its own; `path` is the scopes around `block`.
    fn items<'j>(
        &mut self,
        items: &[ScopeItem],
        eqns: &'j [Eqn],
        block: BlockId,
        path: &str,
        scope: &mut FxHashMap<&'j str, (NodeId, u32)>,
    ) {
        for item in items {
            match item {
                ScopeItem::Eqn(i) => self.equation_in_scope(&eqns[*i], block, scope),
                ScopeItem::Scope { title, items } => {
                    let (first, last, count) = item.equations();
                    let range = TextRange::new(eqns[first].range.start, eqns[last].range.end);
                    let path = if path.is_empty() {
                        title.clone()
                    } else {
                        format!("{path}/{title}")
                    };
                    let id = self.add_node(Node {
                        kind: NodeKind::Scope,
                        label: title.clone(),
                        sublabel: format!("{count} equations"),
                        block,
                        children: Vec::new(),
                        calls: None,
                        range,
                        values: Vec::new(),
                        annotations: Vec::new(),
                        collective: None,
                        text: String::new(),
                    });
                    let inner = self.new_block(path.clone(), Some(id), range);
                    let node = &mut self.graph.nodes[id.0 as usize];
                    node.text = format!("{path}: {count} equations");
                    node.children = vec![inner];
                    self.items(items, eqns, inner, &path, scope);
                }
            }
        }
    }

    /// One equation's node in `block`, the edges of its operands, and its
    /// results in scope.
    fn equation_in_scope<'j>(
        &mut self,
        eqn: &'j Eqn,
        block: BlockId,
        scope: &mut FxHashMap<&'j str, (NodeId, u32)>,
    ) {
        // Each operand's source, or else its text when it is a literal (a
        // bare `inf`/`nan` that no binder defines is one too); `_` and
        // undefined names come from nowhere drawn.
        let operands: Vec<Result<(NodeId, u32), Option<String>>> = eqn
            .args
            .iter()
            .map(|atom| match atom {
                Atom::Var(name) => match scope.get(&*name.text) {
                    Some(&found) => Ok(found),
                    None if atom.is_bare_inf_or_nan() => Err(Some(name.text.to_string())),
                    None => Err(None),
                },
                Atom::Lit(lit) => Err(Some(self.literal_text(lit))),
            })
            .collect();
        let literals: Vec<Option<&str>> = operands
            .iter()
            .map(|o| o.as_ref().err().and_then(|l| l.as_deref()))
            .collect();
        let id = self.equation(eqn, block, &literals);
        for (port, source) in operands.iter().enumerate() {
            if let Ok((from, from_port)) = *source {
                self.graph.edges.push(Edge {
                    from,
                    from_port,
                    to: id,
                    to_port: port as u32,
                });
            }
        }
        for (port, out) in eqn.outs.iter().enumerate() {
            if !out.is_dropped() {
                scope.insert(&out.name.text, (id, port as u32));
            }
        }
    }

    /// A literal as its equation's label shows it: as printed, but a float
    /// of 32 bits or fewer by its shortest decimal (JAX prints an `f32`
    /// literal's double: `0.10000000149011612` for `0.1`).
    fn literal_text(&self, lit: &ast::Literal) -> String {
        let ty = self.type_text(lit.ty.as_ref());
        let narrow = ["f32[", "f16[", "bf16["].iter().any(|p| ty.starts_with(p));
        match lit.value.parse::<f64>() {
            Ok(v) if narrow && v.is_finite() && f64::from(v as f32) == v => {
                format!("{:?}", v as f32)
            }
            _ => lit.value.to_string(),
        }
    }

    /// An equation's node; `literals` holds, per operand, the text of a
    /// literal one.
    fn equation(&mut self, eqn: &Eqn, block: BlockId, literals: &[Option<&str>]) -> NodeId {
        let sublabel = eqn
            .param("name")
            .map(|p| compact(self.slice(p.value.range)))
            .unwrap_or_default();
        let values = eqn
            .outs
            .iter()
            .map(|b| Value {
                name: b.name.text.to_string(),
                ty: self.type_text(b.ty.as_ref()),
            })
            .collect();
        let mut annotations = Vec::new();
        self.annotator.annotate(eqn, &mut annotations);
        let collective = self.annotator.collective(eqn);
        let label = if eqn.incomplete {
            "(incomplete)".to_string()
        } else if literals.iter().any(Option::is_some) {
            // The operands as written, each variable a `·`: `sub 1.0 ·`.
            let mut label = eqn.primitive.text.to_string();
            for literal in literals {
                label.push(' ');
                label.push_str(literal.unwrap_or("·"));
            }
            label
        } else {
            eqn.primitive.text.to_string()
        };
        let id = self.add_node(Node {
            kind: NodeKind::Equation,
            label,
            sublabel,
            block,
            children: Vec::new(),
            calls: None,
            range: eqn.range,
            values,
            annotations,
            collective,
            text: String::new(),
        });
        let first_child = self.graph.blocks.len();
        let mut calls = None;
        for param in &eqn.params {
            let name = param.name.text.as_str();
            match &param.value.kind {
                ExprKind::Jaxpr(inner) => {
                    self.jaxpr(inner, name.to_string(), Some(id));
                }
                ExprKind::Tuple(items) | ExprKind::List(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let ExprKind::Jaxpr(inner) = &item.kind {
                            self.jaxpr(inner, format!("{name}[{i}]"), Some(id));
                        }
                    }
                }
                ExprKind::Path(path) if calls.is_none() => {
                    calls = self.let_named(path);
                }
                _ => {}
            }
        }
        // The parameters' jaxprs and their own `let`s; deeper blocks have
        // other owners.
        let children = (first_child..self.graph.blocks.len())
            .filter(|&b| self.graph.blocks[b].owner == Some(id))
            .map(|b| BlockId(b as u32))
            .collect();
        let node = &mut self.graph.nodes[id.0 as usize];
        node.children = children;
        node.calls = calls;
        id
    }

    fn let_named(&self, name: &str) -> Option<BlockId> {
        self.lets
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, id)| *id)
    }
}

/// An equation's place in the program as written: the scopes of its name
/// stack, then its Python function, unless the innermost scope already
/// names it (`jvp(dense)` from `dense`) or it is a module's top level.
/// Empty without source comments.
fn scope_path(eqn: &Eqn) -> Vec<&str> {
    let mut path: Vec<&str> = eqn
        .name_stack()
        .into_iter()
        .flat_map(ast::name_stack_scopes)
        .collect();
    let function = eqn
        .source_info()
        .and_then(ast::source_function)
        .filter(|f| *f != "<module>");
    if let Some(function) = function {
        // `Model.__call__` is named by a scope `__call__` too.
        let short = function.rsplit('.').next().unwrap_or(function);
        let named = path.last().is_some_and(|s| {
            let bare = bare_scope(s);
            bare == function || bare == short
        });
        if !named {
            path.push(function);
        }
    }
    path
}

/// A scope without the transforms around it: `dense` of
/// `transpose(jvp(dense))`, empty for `jvp()`.
fn bare_scope(mut scope: &str) -> &str {
    while let (Some(open), true) = (scope.find('('), scope.ends_with(')')) {
        scope = &scope[open + 1..scope.len() - 1];
    }
    scope
}

/// One item of a block, in text order: an equation (its index among the
/// jaxpr's equations) or a scope group.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ScopeItem {
    Eqn(usize),
    Scope {
        title: String,
        items: Vec<ScopeItem>,
    },
}

impl ScopeItem {
    /// The first and last equation under this item, and how many.
    fn equations(&self) -> (usize, usize, usize) {
        match self {
            ScopeItem::Eqn(i) => (*i, *i, 1),
            ScopeItem::Scope { items, .. } => {
                let (first, _, _) = items[0].equations();
                let (_, last, _) = items[items.len() - 1].equations();
                let count = items.iter().map(|i| i.equations().2).sum();
                (first, last, count)
            }
        }
    }
}

/// A jaxpr's equations grouped by their scope paths (`paths[i]` is
/// equation `i`'s, outermost scope first). A group is a run of consecutive
/// equations whose paths start alike: the text puts every operand before
/// its use, so no equation outside a run both uses it and feeds it, and a
/// closed group takes its place in the order like an equation. A group of
/// one equation is none; a group holding only a group is one, titled by
/// both (`jvp()/loss`).
pub fn scope_items(paths: &[Vec<&str>]) -> Vec<ScopeItem> {
    fn level(paths: &[Vec<&str>], range: std::ops::Range<usize>, depth: usize) -> Vec<ScopeItem> {
        let mut items = Vec::new();
        let mut i = range.start;
        while i < range.end {
            let Some(&scope) = paths[i].get(depth) else {
                items.push(ScopeItem::Eqn(i));
                i += 1;
                continue;
            };
            let end = (i..range.end)
                .find(|&j| paths[j].get(depth) != Some(&scope))
                .unwrap_or(range.end);
            let inner = level(paths, i..end, depth + 1);
            items.push(match <[ScopeItem; 1]>::try_from(inner) {
                Ok([ScopeItem::Eqn(only)]) => ScopeItem::Eqn(only),
                Ok([ScopeItem::Scope { title, items }]) => ScopeItem::Scope {
                    title: format!("{scope}/{title}"),
                    items,
                },
                Err(items) => ScopeItem::Scope {
                    title: scope.to_string(),
                    items,
                },
            });
            i = end;
        }
        items
    }
    level(paths, 0..paths.len(), 0)
}

/// The start of a node's text, on one line.
fn tooltip(text: &str) -> String {
    let head = match text.char_indices().nth(TOOLTIP_CHARS * 4) {
        Some((at, _)) => &text[..at],
        None => text,
    };
    let line = compact(head);
    if line.chars().count() <= TOOLTIP_CHARS {
        return line;
    }
    let mut out: String = line.chars().take(TOOLTIP_CHARS - 1).collect();
    out.push('…');
    out
}

/// A printed fragment on one line: runs of whitespace become one space.
fn compact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = true;
        } else {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    out
}
