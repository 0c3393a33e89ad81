"""Session-wide test plugins. Fixtures live in tests/fixtures/, one concern a module."""

pytest_plugins = [
    "tests.fixtures.cli_built_once",
    "tests.fixtures.client_home",
    "tests.fixtures.postgres",
    "tests.fixtures.small_disk",
    "tests.fixtures.slurm",
    "tests.fixtures.containers",
    "tests.fixtures.ray_cluster",
    "tests.fixtures.kubernetes",
    "tests.fixtures.parallel",
    "tests.fixtures.s3",
]
