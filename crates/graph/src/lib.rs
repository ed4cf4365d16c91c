//! The dataflow graph of a jaxpr file, for people to look at: the model
//! (`model`: nodes, edges, nested jaxprs as groups), its layered layout
//! (`layout`), and its renderings: SVG, one self-contained HTML page with
//! pan, zoom, search and groups to open and close, Graphviz DOT, and Model
//! Explorer's graph JSON. The command line (`jaxpr graph`) and the language
//! server (the editor's *Show dataflow graph*) both draw through here.
//!
//! Built from the syntax tree alone, so it knows types as printed; what
//! needs the checker (an equation's cost) comes in through
//! [`EquationAnnotator`].

pub mod layout;
pub mod model;
mod render;
pub mod tiling;

pub use model::{
    Annotation, Block, BlockId, Edge, EquationAnnotator, Graph, NoAnnotations, Node, NodeId,
    NodeKind, ScopeItem, Value, build, scope_items,
};
pub use render::Position;
pub use render::dot::dot;
pub use render::html::{HtmlOptions, html};
pub use render::model_explorer::model_explorer_json;
pub use render::svg::{SvgOptions, svg};
