# Types of the compiled module `kestrel._kestrel` (crates/py/src/*.rs). Checked against the
# built module by `stubtest` in the tests (tools/py-test); the public API is the Python
# package around it (kestrel.vector, kestrel.envs, kestrel.evo, ...).

from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any, Self, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "__version__", "VecCore", "list_envs", "arc_operations", "Key", "Strategy", "EvoProblem",
    "QdArchive", "QdEmitter", "QdBenchmark", "strategies", "qd_setup", "default_pop_size",
    "MppiController", "ExternalMppi", "systems", "run", "run_config", "run_kinds", "population_kinds",
    "run_evaluated", "mppi_tune_callbacks", "mppi_tune_evaluate", "sweep_plan", "sweep_create", "sweep_status", "sweep_cell", "sweep_aggregate",
]

__version__: str

_Progress = Callable[[int, int, str, str], object] | None
_Path = str | PathLike[str]
_Space = tuple[Any, ...]

@final
class Key:
    def __new__(cls, seed: int) -> Self: ...
    def fold_in(self, data: int) -> Key: ...
    @property
    def raw(self) -> int: ...
    @staticmethod
    def from_raw(raw: int) -> Key: ...
    def __reduce__(self) -> tuple[Any, tuple[int]]: ...

@final
class VecCore:
    def __new__(cls,
        env_id: str,
        num_envs: int,
        seed: int,
        params_json: str,
        row_offset: int = 0,
        num_threads: int | None = None,
        config_file: _Path | None = None,
    ) -> Self: ...
    def spec(self) -> dict[str, Any]: ...
    def set_autoreset(self, mode: str) -> None: ...
    def reset(self, seed: int) -> None: ...
    def reset_rows(self, mask: npt.NDArray[np.bool_]) -> None: ...
    def step(
        self,
        ints: npt.NDArray[np.int64] | None = None,
        floats: npt.NDArray[np.float64] | None = None,
        sel: npt.NDArray[np.uint8] | None = None,
        cols: Sequence[npt.NDArray[np.int64]] | None = None,
        obs: npt.NDArray[Any] | None = None,
    ) -> int: ...
    def step_async(
        self,
        ints: npt.NDArray[np.int64] | None = None,
        floats: npt.NDArray[np.float64] | None = None,
        sel: npt.NDArray[np.uint8] | None = None,
        cols: Sequence[npt.NDArray[np.int64]] | None = None,
    ) -> None: ...
    def step_wait(self) -> int: ...
    def rollout(
        self,
        steps: int,
        obs: npt.NDArray[Any],
        rewards: npt.NDArray[np.float32],
        terminated: npt.NDArray[np.bool_],
        truncated: npt.NDArray[np.bool_],
        final_obs: npt.NDArray[Any] | None = None,
        episode: tuple[
            npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.bool_]
        ]
        | None = None,
        ints: npt.NDArray[np.int64] | None = None,
        floats: npt.NDArray[np.float64] | None = None,
        sel: npt.NDArray[np.uint8] | None = None,
        cols: Sequence[npt.NDArray[np.int64]] | None = None,
    ) -> int: ...
    def read(
        self,
        obs: npt.NDArray[Any],
        rewards: npt.NDArray[np.float32],
        terminated: npt.NDArray[np.bool_],
        truncated: npt.NDArray[np.bool_],
        episode_steps: npt.NDArray[np.uint32] | None = None,
    ) -> None: ...
    def read_out(self, obs: npt.NDArray[Any]) -> None: ...
    def read_obs(self, obs: npt.NDArray[Any]) -> None: ...
    def read_final_obs(self, obs: npt.NDArray[Any], mask: npt.NDArray[np.bool_]) -> None: ...
    def set_step_out(self, buf: npt.NDArray[np.uint8] | None) -> None: ...
    def set_arc_out(self, buf: npt.NDArray[np.uint8] | None) -> None: ...
    def read_arc_info(
        self,
        similarity: npt.NDArray[np.float32],
        improvement: npt.NDArray[np.float32],
        operation: npt.NDArray[np.int64],
        step: npt.NDArray[np.int64],
        final_step: bool = ...,
    ) -> bool: ...
    def render(self, row: int) -> npt.NDArray[np.uint8]: ...
    def render_text(self, row: int) -> str | None: ...
    def set_state(self, row: int, state: list[float]) -> None: ...
    def state(self, row: int) -> list[float]: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

@final
class Strategy:
    def __new__(cls,
        kind: str,
        mean: list[float],
        pop_size: int | None = None,
        sigma: float = 0.5,
        seed: int = 0,
        init_key: Key | None = None,
        params_json: str = "{}",
        bounds: tuple[list[float], list[float]] | None = None,
        bound_mode: str = "clip",
    ) -> Self: ...
    def ask(self) -> npt.NDArray[np.float32]: ...
    def tell(self, population: npt.NDArray[np.float32], fitness: npt.NDArray[np.float32]) -> dict[str, Any]: ...
    def ask_with(self, key: Key) -> npt.NDArray[np.float32]: ...
    def tell_with(
        self, key: Key, population: npt.NDArray[np.float32], fitness: npt.NDArray[np.float32]
    ) -> dict[str, Any]: ...
    def copy(self) -> Strategy: ...
    def state_dict(self) -> dict[str, npt.NDArray[np.float64]]: ...
    def load_state_dict(self, d: dict[str, npt.NDArray[np.float64]]) -> None: ...
    @property
    def best_fitness(self) -> float: ...
    @property
    def best_solution(self) -> npt.NDArray[np.float32]: ...
    @property
    def generation(self) -> int: ...
    @generation.setter
    def generation(self, value: int) -> None: ...
    @property
    def kind(self) -> str: ...
    @property
    def mean(self) -> npt.NDArray[np.float32]: ...
    @property
    def num_dims(self) -> int: ...
    @property
    def pop_size(self) -> int: ...
    @property
    def seed(self) -> int: ...

@final
class EvoProblem:
    def __new__(cls, name: str, num_dims: int = 10, shift: float = 0.0, rotate: bool = False, seed: int = 0) -> Self: ...
    @staticmethod
    def from_run(kind: str, config_json: str) -> EvoProblem: ...
    def generation_key(self, generation: int) -> Key: ...
    @property
    def num_dims(self) -> int: ...
    def evaluate(
        self,
        population: npt.NDArray[np.float32],
        key: Key | None = None,
        first_row: int = 0,
        threads: int | None = None,
    ) -> npt.NDArray[np.float32]: ...

@final
class QdArchive:
    @staticmethod
    def grid(num_dims: int, cells: list[int], lower: list[float], upper: list[float], qd_offset: float = 0.0) -> QdArchive: ...
    @staticmethod
    def cvt(
        num_dims: int,
        num_cells: int,
        lower: list[float],
        upper: list[float],
        key: Key,
        samples: int | None = None,
        iters: int = 20,
        qd_offset: float = 0.0,
    ) -> QdArchive: ...
    @property
    def num_cells(self) -> int: ...
    @property
    def num_dims(self) -> int: ...
    @property
    def num_measures(self) -> int: ...
    @property
    def occupied(self) -> npt.NDArray[np.bool_]: ...
    @property
    def fitness(self) -> npt.NDArray[np.float32]: ...
    @property
    def solutions(self) -> npt.NDArray[np.float32]: ...
    @property
    def measures(self) -> npt.NDArray[np.float32]: ...
    def stats(self) -> dict[str, Any]: ...
    def index_of(self, measures: npt.NDArray[np.float32]) -> npt.NDArray[np.uint64]: ...
    def add(
        self,
        solutions: npt.NDArray[np.float32],
        fitness: npt.NDArray[np.float32],
        measures: npt.NDArray[np.float32],
    ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float64]]: ...
    def heatmap(
        self,
        lo: list[float],
        hi: list[float],
        labels: list[str],
        title: str,
        objective: bool,
        path: _Path | None = None,
    ) -> npt.NDArray[np.uint8]: ...

@final
class QdEmitter:
    @staticmethod
    def map_elites(batch_size: int, x0: list[float], sigma: float = 0.1, iso_line: tuple[float, float] | None = None) -> QdEmitter: ...
    @staticmethod
    def cma_me(batch_size: int, x0: list[float], sigma0: float, key: Key) -> QdEmitter: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def restarts(self) -> int: ...
    def ask(self, archive: QdArchive, key: Key) -> npt.NDArray[np.float32]: ...
    def tell(
        self,
        archive: QdArchive,
        key: Key,
        population: npt.NDArray[np.float32],
        fitness: npt.NDArray[np.float32],
        measures: npt.NDArray[np.float32],
    ) -> None: ...

@final
class QdBenchmark:
    def __new__(cls, num_dims: int, function: str = "sphere") -> Self: ...
    @property
    def measure_bound(self) -> float: ...
    def evaluate(
        self, population: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...

@final
class MppiController:
    def __new__(cls, config_json: str) -> Self: ...
    @property
    def nx(self) -> int: ...
    @property
    def nu(self) -> int: ...
    @property
    def t(self) -> int: ...
    @property
    def config_toml(self) -> str: ...
    def command(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    def plant_step(self, x: npt.NDArray[np.float64], u: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], float]: ...
    def start_state(self) -> npt.NDArray[np.float64]: ...
    def reset(self) -> None: ...

@final
class ExternalMppi:
    def __new__(cls,
        nx: int,
        nu: int,
        params_json: str,
        dynamics: Callable[..., Any],
        running_cost: Callable[..., Any],
        terminal_cost: Callable[..., Any] | None = None,
        seed: int = 0,
        specific_action_sampler: Callable[..., Any] | None = None,
    ) -> Self: ...
    @property
    def nx(self) -> int: ...
    @property
    def nu(self) -> int: ...
    @property
    def t(self) -> int: ...
    @property
    def plan(self) -> npt.NDArray[np.float64]: ...
    def command(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    def reset(self) -> None: ...

def list_envs() -> list[tuple[str, str, float | None, list[str], int]]: ...
def arc_operations(mode: str) -> list[str]: ...
def strategies() -> list[str]: ...
def default_pop_size(kind: str, num_dims: int) -> int: ...
def qd_setup(config_json: str) -> tuple[int, QdArchive, list[QdEmitter], QdBenchmark]: ...
def systems() -> list[str]: ...
def run_kinds() -> list[tuple[str, str]]: ...
def run_config(
    kind: str,
    config_json: str = "{}",
    config_file: _Path | None = None,
    preset: str | None = None,
    toml: bool = False,
) -> str: ...
def run(
    kind: str,
    config_json: str,
    out_dir: _Path,
    config_file: _Path | None = None,
    preset: str | None = None,
    resume: _Path | None = None,
    threads: int | None = None,
    progress: _Progress = None,
    tag: str | None = None,
) -> tuple[str, str]: ...
def population_kinds() -> list[str]: ...
def run_evaluated(
    kind: str,
    config_json: str,
    out_dir: _Path,
    evaluate: Callable[..., Any],
    threads: int | None = None,
    progress: _Progress = None,
    tag: str | None = None,
) -> tuple[str, str]: ...
def mppi_tune_callbacks(
    config_json: str,
    out_dir: _Path,
    nx: int,
    nu: int,
    dynamics: Callable[..., Any],
    running_cost: Callable[..., Any],
    terminal_cost: Callable[..., Any] | None = None,
    threads: int | None = None,
    progress: _Progress = None,
    tag: str | None = None,
) -> tuple[str, str]: ...
def mppi_tune_evaluate(
    config_json: str,
    out_dir: _Path,
    nu: int,
    evaluate: Callable[..., Any],
    threads: int | None = None,
    progress: _Progress = None,
    tag: str | None = None,
) -> tuple[str, str]: ...
def sweep_plan(spec: str, source: str, out_dir: _Path) -> tuple[str, str, list[str], str]: ...
def sweep_create(spec: str, source: str, out_dir: _Path) -> None: ...
def sweep_status(spec: str, source: str, out_dir: _Path) -> list[tuple[str, str]]: ...
def sweep_cell(
    spec: str,
    source: str,
    out_dir: _Path,
    cell: str,
    threads: int | None = None,
    progress: _Progress = None,
) -> tuple[str, str, str]: ...
def sweep_aggregate(spec: str, source: str, out_dir: _Path) -> tuple[str, str]: ...
