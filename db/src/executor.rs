//! The one `Executor` shape both our pools share: each statement takes a connection for its own
//! length through the pool's `acquire` (which is where each pool's policy lives: the background
//! queue on SQLite, the idle check on PostgreSQL), as it would from sqlx's pool.

/// A checkout that can be told not to go back to its pool.
pub(crate) trait Discard {
    fn discard(&mut self);
}

impl<DB: sqlx::Database> Discard for sqlx::pool::PoolConnection<DB> {
    fn discard(&mut self) {
        self.close_on_drop();
    }
}

/// Whether `error` says the connection itself is gone (the server ended it, as a restart or
/// `pg_terminate_backend` does, or the socket failed): such a connection is closed instead of going
/// back, or the next request to take it would fail as well (it sat idle too briefly to be checked).
pub(crate) fn ends_connection(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) => true,
        // SQLSTATE class 08, connection exception; 57P01..57P05, the server shutting the session.
        sqlx::Error::Database(error) => {
            error.code().is_some_and(|code| code.starts_with("08") || code.starts_with("57P"))
        }
        _ => false,
    }
}

/// `$result` of a statement on `$connection` (a `&mut` checkout); a connection it showed broken
/// is discarded.
macro_rules! discard_if_broken {
    ($connection:expr, $result:expr) => {{
        let result = $result;
        if let Err(error) = &result {
            if $crate::executor::ends_connection(error) {
                $crate::executor::Discard::discard($connection);
            }
        }
        result
    }};
}

pub(crate) use discard_if_broken;

/// `impl Executor for &$pool`, where `$pool` has `async fn acquire(&self)` giving something that
/// derefs to `$database`'s connection.
macro_rules! executor_by_checkout {
    ($pool:ty, $database:ty) => {
        impl<'p> sqlx::Executor<'p> for &'_ $pool {
            type Database = $database;

            fn fetch_many<'e, 'q: 'e, E>(
                self,
                query: E,
            ) -> futures_core::stream::BoxStream<
                'e,
                Result<
                    sqlx::Either<<$database as sqlx::Database>::QueryResult, <$database as sqlx::Database>::Row>,
                    sqlx::Error,
                >,
            >
            where
                E: 'q + sqlx::Execute<'q, $database>,
            {
                use futures_util::TryStreamExt;
                let pool = self.clone();
                Box::pin(sqlx_core::ext::async_stream::TryAsyncStream::new(move |yielder| async move {
                    let mut connection = pool.acquire().await?;
                    let mut failed = None;
                    {
                        let mut rows = sqlx::Executor::fetch_many(&mut *connection, query);
                        loop {
                            match rows.try_next().await {
                                Ok(Some(row)) => yielder.r#yield(row).await,
                                Ok(None) => break,
                                Err(error) => {
                                    failed = Some(error);
                                    break;
                                }
                            }
                        }
                    }
                    match failed {
                        Some(error) => $crate::executor::discard_if_broken!(&mut connection, Err(error)),
                        None => Ok(()),
                    }
                }))
            }

            fn fetch_optional<'e, 'q: 'e, E>(
                self,
                query: E,
            ) -> futures_core::future::BoxFuture<'e, Result<Option<<$database as sqlx::Database>::Row>, sqlx::Error>>
            where
                E: 'q + sqlx::Execute<'q, $database>,
            {
                let pool = self.clone();
                Box::pin(async move {
                    let mut connection = pool.acquire().await?;
                    $crate::executor::discard_if_broken!(
                        &mut connection,
                        sqlx::Executor::fetch_optional(&mut *connection, query).await
                    )
                })
            }

            // The two every store uses most, without the stream of the default ones.
            fn execute<'e, 'q: 'e, E>(
                self,
                query: E,
            ) -> futures_core::future::BoxFuture<'e, Result<<$database as sqlx::Database>::QueryResult, sqlx::Error>>
            where
                E: 'q + sqlx::Execute<'q, $database>,
            {
                let pool = self.clone();
                Box::pin(async move {
                    let mut connection = pool.acquire().await?;
                    $crate::executor::discard_if_broken!(
                        &mut connection,
                        sqlx::Executor::execute(&mut *connection, query).await
                    )
                })
            }

            fn fetch_all<'e, 'q: 'e, E>(
                self,
                query: E,
            ) -> futures_core::future::BoxFuture<'e, Result<Vec<<$database as sqlx::Database>::Row>, sqlx::Error>>
            where
                E: 'q + sqlx::Execute<'q, $database>,
            {
                let pool = self.clone();
                Box::pin(async move {
                    let mut connection = pool.acquire().await?;
                    $crate::executor::discard_if_broken!(
                        &mut connection,
                        sqlx::Executor::fetch_all(&mut *connection, query).await
                    )
                })
            }

            fn prepare_with<'e>(
                self,
                sql: sqlx::SqlStr,
                parameters: &'e [<$database as sqlx::Database>::TypeInfo],
            ) -> futures_core::future::BoxFuture<'e, Result<<$database as sqlx::Database>::Statement, sqlx::Error>>
            where
                'p: 'e,
            {
                let pool = self.clone();
                Box::pin(
                    async move { sqlx::Executor::prepare_with(&mut *pool.acquire().await?, sql, parameters).await },
                )
            }

            fn describe<'e>(
                self,
                sql: sqlx::SqlStr,
            ) -> futures_core::future::BoxFuture<'e, Result<sqlx::Describe<$database>, sqlx::Error>> {
                let pool = self.clone();
                Box::pin(async move { sqlx::Executor::describe(&mut *pool.acquire().await?, sql).await })
            }
        }
    };
}

pub(crate) use executor_by_checkout;
