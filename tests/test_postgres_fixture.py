"""The throwaway PostgreSQL cluster answers queries through SQLAlchemy and psycopg."""

import pytest
import sqlalchemy


@pytest.mark.postgres
def test_postgres_cluster_answers_a_query(postgres_url: str) -> None:
    engine = sqlalchemy.create_engine(postgres_url)
    try:
        with engine.connect() as connection:
            assert connection.execute(sqlalchemy.text("select 1")).scalar_one() == 1
            version = connection.execute(sqlalchemy.text("show server_version")).scalar_one()
            assert version.split(".")[0].isdigit()
    finally:
        engine.dispose()
