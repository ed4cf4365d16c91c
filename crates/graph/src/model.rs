//! The graph model: what a printed jaxpr file says as nodes and edges.
//!
//! Every jaxpr of the file is a [`Block`]: its constvars, inputs, literal
//! operands, equations and outputs are nodes, and each value that flows from
//! one node to another is an [`Edge`] labelled with its printed type. An
//! equation whose parameters hold jaxprs (`pjit`'s `jaxpr`, `cond`'s
//! `branches`, `scan`'s body, `while`'s `cond_jaxpr` and `body_jaxpr`,
//! `custom_jvp_call`'s `call_jaxpr`, Catalyst's `for_loop`, `while_loop` and
//! quantum regions, ...) owns them as child blocks: that node is a group,
//! drawn collapsed as one node or expanded with its blocks inside. A file's
//! `let` jaxprs are blocks of their own at the top, beside the main jaxpr; an
//! equation that names one (`jaxpr=NAME`) links to it.
//!
//! Jaxprs are closed, so every edge joins two nodes of one block. The model is
//! built from the syntax tree alone (types as printed), so a file with errors
//! still draws as far as it parses.

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
    /// A literal operand (`1.0:f32[]`), or a bare `inf`/`nan` no binder defines.
    Literal,
    /// An equation.
    Equation,
    /// One output of a jaxpr (the atoms after `in`).
    Output,
}

impl NodeKind {
    /// The class name renderings use (`node eqn`, `node input`, ...).
    pub fn css_class(self) -> &'static str {
        match self {
            NodeKind::Input => "input",
            NodeKind::Const => "const",
            NodeKind::Literal => "literal",
            NodeKind::Equation => "eqn",
            NodeKind::Output => "output",
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
    /// The primitive for an equation, the variable's name for an input,
    /// constvar or output, the value for a literal.
    pub label: String,
    /// A second, shorter line: an equation's `name=` parameter (`pjit`'s
    /// function name), an input's or output's type.
    pub sublabel: String,
    pub block: BlockId,
    /// The jaxprs this equation holds in its parameters (a group when not
    /// empty), in parameter order.
    pub children: Vec<BlockId>,
    /// The `let` jaxpr an equation names in a parameter (`jaxpr=NAME`).
    pub calls: Option<BlockId>,
    /// Where the node is in the text: the whole equation, the binder, the
    /// literal or the output atom.
    pub range: TextRange,
    /// The names and types of the values this node defines, in order (an
    /// equation's results; the one value of an input, constvar or literal).
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
/// `to_port`-th operand of `to`.
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
    /// `branches[1]`, `body_jaxpr`).
    pub title: String,
    /// The equation whose parameter holds this jaxpr; `None` for the file's
    /// main jaxpr and its `let`s.
    pub owner: Option<NodeId>,
    /// Its nodes, in text order: constvars, inputs, then each equation after
    /// its literal operands, then the outputs.
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

    /// An edge's label: its value's type, and for a result of a collective
    /// what the collective moves (`f32[8,4] ⇄ all-reduce 224 B/device`).
    pub fn edge_label(&self, edge: &Edge) -> std::borrow::Cow<'_, str> {
        let ty = self.edge_type(edge);
        match &self.node(edge.from).collective {
            Some(moved) => format!("{ty} ⇄ {moved}").into(),
            None => ty.into(),
        }
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
        let block = BlockId(self.graph.blocks.len() as u32);
        self.graph.blocks.push(Block {
            title,
            owner,
            nodes: Vec::new(),
            range: jaxpr.range,
        });
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
        for eqn in &jaxpr.eqns {
            let sources: Vec<Option<(NodeId, u32)>> = eqn
                .args
                .iter()
                .map(|atom| self.operand(atom, &scope, block))
                .collect();
            let id = self.equation(eqn, block);
            for (port, source) in sources.into_iter().enumerate() {
                if let Some((from, from_port)) = source {
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
        for atom in &jaxpr.outvars {
            let source = self.operand(atom, &scope, block);
            let ty = source
                .map(|(node, port)| {
                    self.graph.nodes[node.0 as usize].values[port as usize]
                        .ty
                        .clone()
                })
                .unwrap_or_default();
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

    /// The node and port an operand comes from: a variable in scope, or a
    /// new literal node. `_` comes from nowhere drawn.
    fn operand(
        &mut self,
        atom: &Atom,
        scope: &FxHashMap<&str, (NodeId, u32)>,
        block: BlockId,
    ) -> Option<(NodeId, u32)> {
        let (value, ty) = match atom {
            Atom::Var(name) => {
                if let Some(&found) = scope.get(&*name.text) {
                    return Some(found);
                }
                if !atom.is_bare_inf_or_nan() {
                    return None;
                }
                (name.text.to_string(), String::new())
            }
            Atom::Lit(lit) => (lit.value.to_string(), self.type_text(lit.ty.as_ref())),
        };
        let id = self.add_node(Node {
            kind: NodeKind::Literal,
            label: value.clone(),
            sublabel: ty.clone(),
            block,
            children: Vec::new(),
            calls: None,
            range: atom.range(),
            values: vec![Value { name: value, ty }],
            annotations: Vec::new(),
            collective: None,
            text: String::new(),
        });
        Some((id, 0))
    }

    fn equation(&mut self, eqn: &Eqn, block: BlockId) -> NodeId {
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
