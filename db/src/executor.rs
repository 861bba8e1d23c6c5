//! The one `Executor` shape both our pools share: each statement takes a connection for its own
//! length through the pool's `acquire` (which is where each pool's policy lives: the background
//! queue on SQLite, the idle check on PostgreSQL), as it would from sqlx's pool.

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
                    let mut rows = sqlx::Executor::fetch_many(&mut *connection, query);
                    while let Some(row) = rows.try_next().await? {
                        yielder.r#yield(row).await;
                    }
                    Ok(())
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
                Box::pin(async move { sqlx::Executor::fetch_optional(&mut *pool.acquire().await?, query).await })
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
                Box::pin(async move { sqlx::Executor::execute(&mut *pool.acquire().await?, query).await })
            }

            fn fetch_all<'e, 'q: 'e, E>(
                self,
                query: E,
            ) -> futures_core::future::BoxFuture<'e, Result<Vec<<$database as sqlx::Database>::Row>, sqlx::Error>>
            where
                E: 'q + sqlx::Execute<'q, $database>,
            {
                let pool = self.clone();
                Box::pin(async move { sqlx::Executor::fetch_all(&mut *pool.acquire().await?, query).await })
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
