//! `#[derive(Documented)]`: a config struct's field names and `///` doc comments, read at run
//! time through `kestrel_core::Documented` (`kestrel config <kind>` prints them as commented
//! TOML; an unknown key is answered with the closest valid one). The field names are the
//! struct's own, so no key is spelled twice. A field whose type is itself a documented config
//! table is marked `#[documented(nested)]`; its keys are then listed (and checked) below it.
//! A field marked `#[documented(flatten)]` (beside `#[serde(flatten)]`) contributes its
//! type's keys in its place, as serde reads them. A field without a doc comment is a compile
//! error: every config key is documented.

use proc_macro::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields, parse_macro_input};

/// Implements `kestrel_core::Documented` for a struct with named fields.
#[proc_macro_derive(Documented, attributes(documented))]
pub fn derive_documented(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn doc_of(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for a in attrs {
        if !a.path().is_ident("doc") {
            continue;
        }
        let syn::Meta::NameValue(nv) = &a.meta else { continue };
        // A doc passed through a `macro_rules!` `$doc:expr` arrives wrapped in a group.
        let mut value = &nv.value;
        while let syn::Expr::Group(g) = value {
            value = &g.expr;
        }
        if let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = value {
            let line = s.value().trim().to_string();
            // A link's target (`[`Foo`]: path::Foo`) is for rustdoc, not the reader.
            if !(line.starts_with('[') && line.contains("]: ")) {
                lines.push(line);
            }
        }
    }
    // Rustdoc links read as plain code in a config file: [`Foo`] -> `Foo`.
    lines.join(" ").trim().replace("[`", "`").replace("`]", "`")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_doc_reads_without_its_link_targets() {
        let attrs: Vec<syn::Attribute> = vec![
            syn::parse_quote!(#[doc = " Through [`Dynamics::step`]."]),
            syn::parse_quote!(#[doc = ""]),
            syn::parse_quote!(#[doc = " [`Dynamics::step`]: kestrel_dynamics::Dynamics::step"]),
        ];
        assert_eq!(super::doc_of(&attrs), "Through `Dynamics::step`.");
    }
}

/// The field's `#[documented(...)]` mark: `nested` or `flatten`.
#[derive(Clone, Copy, PartialEq)]
enum Mark {
    Plain,
    Nested,
    Flatten,
}

fn mark(attrs: &[syn::Attribute]) -> syn::Result<Mark> {
    let mut found = Mark::Plain;
    for a in attrs.iter().filter(|a| a.path().is_ident("documented")) {
        a.parse_nested_meta(|m| {
            if m.path.is_ident("nested") {
                found = Mark::Nested;
                Ok(())
            } else if m.path.is_ident("flatten") {
                found = Mark::Flatten;
                Ok(())
            } else {
                Err(m.error("expected `nested` or `flatten`"))
            }
        })?;
    }
    Ok(found)
}

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(input, "Documented: a struct with named fields"));
    };
    let Fields::Named(fields) = &data.fields else {
        return Err(syn::Error::new_spanned(input, "Documented: a struct with named fields"));
    };
    // Each field is one entry, or (flattened) its type's whole list.
    let mut entries = Vec::new();
    let mut flattened = Vec::new();
    for f in &fields.named {
        let ident = f.ident.as_ref().expect("named fields have names");
        let name = ident.to_string();
        let name = name.strip_prefix("r#").unwrap_or(&name).to_string();
        let ty = &f.ty;
        let m = mark(&f.attrs)?;
        if m == Mark::Flatten {
            flattened.push(entries.len());
            entries.push(quote! { <#ty as ::kestrel_core::Documented>::fields() });
            continue;
        }
        let doc = doc_of(&f.attrs);
        if doc.is_empty() {
            return Err(syn::Error::new_spanned(
                ident,
                "Documented: every field needs a `///` doc comment",
            ));
        }
        let sub = if m == Mark::Nested {
            quote! { ::core::option::Option::Some(<#ty as ::kestrel_core::Documented>::fields) }
        } else {
            quote! { ::core::option::Option::None }
        };
        entries.push(quote! {
            ::kestrel_core::FieldDoc { name: #name, doc: #doc, nested: #sub }
        });
    }
    let ident = &input.ident;
    let (imp, ty, wh) = input.generics.split_for_impl();
    if flattened.is_empty() {
        return Ok(quote! {
            impl #imp ::kestrel_core::Documented for #ident #ty #wh {
                fn fields() -> &'static [::kestrel_core::FieldDoc] {
                    &[#(#entries),*]
                }
            }
        });
    }
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "Documented: `flatten` in a generic struct",
        ));
    }
    let pushes = entries.iter().enumerate().map(|(i, e)| {
        if flattened.contains(&i) {
            quote! { v.extend_from_slice(#e); }
        } else {
            quote! { v.push(#e); }
        }
    });
    // The list is built once, on first use, and kept for the program's life.
    Ok(quote! {
        impl ::kestrel_core::Documented for #ident {
            fn fields() -> &'static [::kestrel_core::FieldDoc] {
                static FIELDS: ::std::sync::OnceLock<::std::vec::Vec<::kestrel_core::FieldDoc>> =
                    ::std::sync::OnceLock::new();
                FIELDS.get_or_init(|| {
                    let mut v = ::std::vec::Vec::new();
                    #(#pushes)*
                    v
                })
            }
        }
    })
}
