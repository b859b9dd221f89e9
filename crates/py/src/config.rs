//! Config layers from Python: a dict (sent as JSON) becomes the TOML table the CLI's flags
//! are, so the run registry reads both the same way. A leaf module: the bindings' other
//! modules import it, it imports only the errors.

use crate::errors::value_error;
use pyo3::PyResult;

/// A JSON object (from Python's `json.dumps` of a dict) as a TOML table, the config layer
/// the CLI's flags are.
pub(crate) fn json_table(json: &str) -> PyResult<toml::Table> {
    let v: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| value_error(format!("config: not valid JSON: {e}")))?;
    if !v.is_object() {
        return Err(value_error("config: must be a dict"));
    }
    toml::Table::try_from(v).map_err(|e| value_error(format!("config: {e}")))
}
