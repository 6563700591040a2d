//! `#[derive(ModuleTree)]`: what a notebook's own model struct needs for `model.repr()`, PyTorch's
//! `print(model)`, in tchbook's prelude (`tchbook_prelude::models::ModuleTree`, whose docs say
//! what the tree is).
//!
//! Each field is a child named as the field, in the order written, as PyTorch registers a
//! module's attributes in `__init__`; the struct's name is the class name. A field's type says
//! what it holds through the prelude's `ModuleField`: a tch layer is a line, a struct that
//! derives this is a nested module, a `Vec` is a `ModuleList`, and numbers, flags, strings and
//! tensors hold no layers and are left out (as PyTorch leaves out attributes that are not modules). A field of
//! any other type is a compile error that names it, so a model never prints without a layer it
//! holds; `#[module(skip)]` leaves such a field out on purpose (a closure, a config struct).
//!
//! ```text
//! #[derive(Debug, ModuleTree)]
//! #[module(name = "Model")]          // the class name printed, when it is not the struct's
//! struct IrisModel {
//!     fc1: nn::Linear,                // (fc1): Linear(in_features=4, out_features=8, bias=True)
//!     sizes: [i64; 4],                // no line
//!     #[module(skip)]
//!     activation: fn(&Tensor) -> Tensor,
//! }
//! ```

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, LitStr, parse_macro_input, parse_quote};

/// Implements `tchbook_prelude::models::ModuleTree` for a struct: its fields are the module's
/// children (see the crate's docs for `#[module(skip)]` and `#[module(name = "...")]`).
#[proc_macro_derive(ModuleTree, attributes(module))]
pub fn derive_module_tree(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

fn expand(mut input: DeriveInput) -> syn::Result<Tokens> {
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new(
            Span::call_site(),
            "#[derive(ModuleTree)] describes a struct's fields; for an enum, write \
             `impl ModuleTree` by hand (its `module_tree` returns the variant's node)",
        ));
    };
    let mut class = LitStr::new(&input.ident.to_string(), input.ident.span());
    for attr in &input.attrs {
        if attr.path().is_ident("module") {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("name") {
                    class = meta.value()?.parse()?;
                    Ok(())
                } else {
                    Err(meta.error("expected `#[module(name = \"ClassName\")]` on a struct"))
                }
            })?;
        }
    }
    let tree = quote!(::tchbook_prelude::models::ModuleTree);
    let node = quote!(::tchbook_prelude::models::ModuleNode);
    let field_trait = quote!(::tchbook_prelude::models::ModuleField);
    let mut children = Vec::new();
    let fields = match &data.fields {
        Fields::Named(f) => f.named.iter().collect(),
        Fields::Unnamed(f) => f.unnamed.iter().collect(),
        Fields::Unit => Vec::new(),
    };
    for (index, field) in fields.into_iter().enumerate() {
        if skipped(field)? {
            continue;
        }
        let (name, access) = match &field.ident {
            Some(ident) => (ident.to_string(), quote!(#ident)),
            None => {
                let index = syn::Index::from(index);
                (index.index.to_string(), quote!(#index))
            }
        };
        // Spanned at the field's type: a type that is no `ModuleField` is reported there.
        let ty = &field.ty;
        children.push(quote_spanned! {ty.span()=>
            (#name, <#ty as #field_trait>::field_node(&self.#access))
        });
    }
    // A type parameter is a field's type, or inside one: it must say what it holds.
    let params: Vec<_> = input
        .generics
        .type_params()
        .map(|p| p.ident.clone())
        .collect();
    let where_clause = input.generics.make_where_clause();
    for param in params {
        where_clause
            .predicates
            .push(parse_quote!(#param: #field_trait));
    }
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics #tree for #ident #type_generics #where_clause {
            fn module_tree(&self) -> #node {
                #node::module(#class, ::std::vec![#(#children),*])
            }
        }
    })
}

/// Whether a field is marked `#[module(skip)]`.
fn skipped(field: &syn::Field) -> syn::Result<bool> {
    let mut skip = false;
    for attr in &field.attrs {
        if attr.path().is_ident("module") {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("skip") {
                    skip = true;
                    Ok(())
                } else {
                    Err(meta.error("expected `#[module(skip)]` on a field"))
                }
            })?;
        }
    }
    Ok(skip)
}
