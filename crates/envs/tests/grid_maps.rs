//! The paper's 15 maps from `shared/data/laplacian-grids` parse to the shapes and state counts
//! of the reference (§1.2). Skipped, with a message, when the data folder is absent.

use kestrel_envs::GridMap;

#[test]
fn the_paper_maps_have_the_reference_sizes() {
    let Some(dir) = kestrel_testkit::shared_subdir("laplacian-grids") else { return };
    let want = [
        ("GridMaze-7", 7, 9, 11),
        ("GridMaze-9", 9, 9, 13),
        ("GridMaze-11", 11, 11, 17),
        ("GridMaze-17", 17, 19, 87),
        ("GridMaze-19", 19, 19, 161),
        ("GridMaze-26", 26, 32, 388),
        ("GridMaze-32", 32, 32, 475),
        ("GridRoom-1", 17, 17, 225),
        ("GridRoom-4", 13, 13, 104),
        ("GridRoom-16", 21, 21, 271),
        ("GridRoom-32", 41, 21, 544),
        ("GridRoom-64", 41, 41, 1088),
        ("GridRoomSym-4", 13, 13, 104),
        ("GridRoomSmall-1", 8, 8, 36),
        ("GridRoomSmallAsym-1", 7, 8, 30),
    ];
    for (name, rows, cols, states) in want {
        let m = GridMap::load(&dir.join(format!("{name}.txt"))).unwrap();
        assert_eq!((m.rows, m.cols, m.num_states()), (rows, cols, states), "{name}");
    }
}
