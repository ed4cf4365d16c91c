"""ott-jax, as its docs write it: a `PointCloud` geometry, a `LinearProblem`,
`sinkhorn.Sinkhorn()` and its differentiable cost."""
import jax
from ott.geometry import pointcloud
from ott.problems.linear import linear_problem
from ott.solvers.linear import sinkhorn
from ott.tools import sinkhorn_divergence

from common import Program, f32

DISTRIBUTIONS = ["ott-jax"]


def reg_ot_cost(x, y):
    geom = pointcloud.PointCloud(x, y, epsilon=0.1)
    return sinkhorn.Sinkhorn(max_iterations=50)(linear_problem.LinearProblem(geom)).reg_ot_cost


def programs():
    ps = []
    x, y = f32(1, 6, 2), f32(2, 5, 2) + 1.0
    ps.append(Program("sinkhorn_cost", reg_ot_cost, [x, y], "the docs' quickstart: PointCloud, Sinkhorn, reg_ot_cost"))

    def coupling(x, y):
        geom = pointcloud.PointCloud(x, y, epsilon=0.1)
        return sinkhorn.Sinkhorn(max_iterations=50)(linear_problem.LinearProblem(geom)).matrix
    ps.append(Program("sinkhorn_coupling", coupling, [x, y], "the transport matrix of the Sinkhorn solution"))
    ps.append(Program("sinkhorn_cost_grad", jax.grad(reg_ot_cost), [x, y], "the cost's gradient w.r.t. the points"))
    ps.append(Program("sinkhorn_divergence", lambda x, y: sinkhorn_divergence.sinkhorn_divergence(
        pointcloud.PointCloud, x, y, epsilon=0.1)[0], [x, y], "sinkhorn_divergence (its value)"))
    ps.append(Program("sinkhorn_weighted", lambda x, y, a, b: sinkhorn.Sinkhorn(max_iterations=50)(
        linear_problem.LinearProblem(pointcloud.PointCloud(x, y, epsilon=0.2), a=a, b=b)).reg_ot_cost,
        [x, y, jax.nn.softmax(f32(3, 6)), jax.nn.softmax(f32(4, 5))], "Sinkhorn with marginal weights a, b"))
    return ps
