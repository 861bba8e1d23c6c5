//! Failures of ours that the reader cannot act on, as every backend reports them: logged here
//! with what went wrong, and only `AppError::Internal` to the reader.

use app::error::AppError;

use crate::store::StoreError;

pub(crate) fn internal(error: StoreError) -> AppError {
    tracing::error!(%error, "store failure");
    AppError::Internal
}

pub(crate) fn content_failure(error: content::store::ContentError) -> AppError {
    tracing::error!(%error, "content store failure");
    AppError::Internal
}

pub(crate) fn runtime_failure(error: runtime::RuntimeError) -> AppError {
    tracing::error!(%error, "runtime failure");
    AppError::Internal
}
