//! The experiment's true environment built from its section of the config: the vector field,
//! the noise convention and the observation model (weights drawn from the key).

use crate::config::{Bugs, EnvConfig, FieldKind, ObsKind, ObsNoiseKind};
use crate::error::ActdynError;
use kestrel_core::{FromInvalid, Key};
use kestrel_envs::vectorfield::{
    DoubleLimitCycle, Duffing, LimitCycle, Linear, Mlp, MultiAttractor, MultiAttractorConfig,
    NoiseConvention, ObsMap, ObsNoise, ObservationModel, PoissonVariant, Snowman, VanDerPol,
    VectorField, VectorFieldParams,
};

/// The true environment of `env` (field, noise convention, observation model from the key).
pub fn build_env(e: &EnvConfig, bugs: &Bugs, key: Key) -> Result<VectorFieldParams, ActdynError> {
    let [key_obs, key_field] = key.split::<2>();
    let env_err = |err: kestrel_envs::EnvError| {
        ActdynError::invalid("env", err, "valid environment parameters")
    };
    let field = match e.field {
        FieldKind::LimitCycle => {
            let f = LimitCycle::default();
            VectorField::LimitCycle(if bugs.env_alpha_autoscale {
                f
            } else {
                f.with_alpha(e.alpha).map_err(env_err)?
            })
        }
        FieldKind::DoubleLimitCycle => {
            let f = DoubleLimitCycle::default();
            VectorField::DoubleLimitCycle(if bugs.env_alpha_autoscale {
                f
            } else {
                f.with_alpha(e.alpha).map_err(env_err)?
            })
        }
        FieldKind::MultiAttractor => VectorField::MultiAttractor(
            MultiAttractor::generate(key_field, &MultiAttractorConfig::default())
                .map_err(env_err)?,
        ),
        FieldKind::VanDerPol => {
            VectorField::VanDerPol(VanDerPol { alpha: e.alpha, ..VanDerPol::default() })
        }
        FieldKind::Duffing => {
            VectorField::Duffing(Duffing { alpha: e.alpha, ..Duffing::default() })
        }
        FieldKind::Snowman => {
            VectorField::Snowman(Snowman { alpha: e.alpha, ..Snowman::default() })
        }
    };
    let map = match e.obs {
        ObsKind::Identity => ObsMap::Identity,
        ObsKind::Linear => ObsMap::Linear(Linear::init(key_obs, 2, e.obs_dim).map_err(env_err)?),
        ObsKind::LogLinear => {
            ObsMap::LogLinear(Linear::init(key_obs, 2, e.obs_dim).map_err(env_err)?)
        }
        ObsKind::Mlp => ObsMap::Mlp(Mlp::init(key_obs, 2, &[16], e.obs_dim).map_err(env_err)?),
    };
    let noise = match e.obs_noise_kind {
        ObsNoiseKind::Gaussian if e.obs_noise > 0.0 => ObsNoise::Gaussian { scale: e.obs_noise },
        ObsNoiseKind::Gaussian => ObsNoise::None,
        ObsNoiseKind::Poisson => ObsNoise::Poisson(PoissonVariant::Count),
    };
    let p = VectorFieldParams {
        field,
        dt: e.dt,
        noise_scale: e.noise_scale,
        noise_convention: if bugs.env_noise_sqrt_q_times_dt {
            NoiseConvention::SqrtQTimesDt
        } else {
            NoiseConvention::SqrtOfQDt
        },
        obs: ObservationModel { map, noise },
        action: Default::default(),
        action_bound: e.action_bound,
        max_episode_steps: None,
    };
    p.validate().map_err(env_err)?;
    Ok(p)
}
